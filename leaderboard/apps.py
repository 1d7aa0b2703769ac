from django.apps import AppConfig


class LeaderboardConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "leaderboard"
    verbose_name = "Leaderboard"

    def ready(self) -> None:
        # The review queue receives the submissions domain's signals (a domain below it).
        # Notifications receive the review domain's decisions.
        # The object permissions (`rules`) register when their module is imported.
        from leaderboard.catalog.teams import permissions  # noqa: F401
        from leaderboard.notifications import receivers as notification_receivers  # noqa: F401
        from leaderboard.review import receivers  # noqa: F401
