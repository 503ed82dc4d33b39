"""CEL, the Cayuga Event Language (docs/cel.md; thesis ch. 3-4): AST, parser, validation."""
