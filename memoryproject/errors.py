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


class PreconditionFailed(DomainError):
    """A write made on a state the row is no longer in (If-Match, expected_updated_at): nothing was
    changed. Carries what the row is now, for the caller to read it again: its `updated_at` (None for
    a project context never changed) and its ETag."""

    status_code = 412

    def __init__(self, detail: str, *, updated_at, etag: str):
        super().__init__(detail)
        self.updated_at = updated_at
        self.etag = etag
