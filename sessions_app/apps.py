from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    label = "sessions_app"
    verbose_name = "Sessions (short-term memory)"

    def ready(self):
        from sessions_app import checks  # noqa: F401  (registers the system checks)
