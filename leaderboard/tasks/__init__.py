"""The Celery shell: the registry of job kinds (`registry`), the one runner of their tasks
(`runner`) and the tasks of each queue (`cpu`: cpu and notify; `gpu`), which a worker
registers (evalserver/celery.py). Above every domain: it imports their services and models,
and nothing under leaderboard/ imports it (the web side sends tasks by name,
leaderboard/queue.py). The Django-free cores it runs are in workers/.
"""
