"""The leaderboard Django app: catalog, submissions, scores, review (models, services, views)."""
