from django.apps import AppConfig


class BenchmarksConfig(AppConfig):
    """Benchmark commands and their data. Production code never imports this package."""

    name = "benchmarks"
    label = "benchmarks"
