"""The subscription API (``xscl api``): an ASGI app over a job's registry and results.

``tokens.py`` the clients' tokens (hashes only), ``limits.py`` request limits and the
subscribe rate limit, ``metrics.py`` the counters of ``/metrics``, ``openapi.py`` the
OpenAPI document, ``app.py`` the Starlette app (``create_app``); ``cli/api.py``
starts it on uvicorn. It talks to the job only through the registry
(``service.subscriptions``, each client's ids in a namespace of its own:
``service.namespaces``) and the results folder (``results.cursor``).
"""
