"""The relational event engine beside XSCL: CEL queries over event streams (docs/cel.md).

``reference`` evaluates the algebra by brute force (the oracle); the engine
runs the queries as merged Cayuga automata with the indices of thesis 4.5.
"""
