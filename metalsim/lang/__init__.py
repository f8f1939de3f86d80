"""The front end: preprocessor, lexer, parser, AST and the MSL type system."""
