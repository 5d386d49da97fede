"""Domain errors raised by services and selectors.

They are mapped to HTTP once, in memoryproject/api.py; HTML views turn them into form errors. Each
carries a human-readable detail and optional field errors in the API contract's shape.
"""


class DomainError(Exception):
    status_code = 400

    def __init__(self, detail: str, errors: list[dict] | None = None):
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or []


class InvalidInput(DomainError):
    status_code = 422


class NotFound(DomainError):
    status_code = 404


class PermissionDenied(DomainError):
    status_code = 403


class Conflict(DomainError):
    status_code = 409


class TooLarge(DomainError):
    status_code = 413
