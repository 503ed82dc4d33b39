"""What the job serves from: subscriptions and their registry (with per-client id
namespaces, ``namespaces.py``), compiled queries, the
subscriptions in effect at a registry version, process pairs (lease, epochs, status)
and sharing groups. No Spark import: the CLI, the driver and executor tasks use it alike.
"""
