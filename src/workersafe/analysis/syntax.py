"""The `ast` node types the analysis tests nodes against, as module constants.

Compiled by mypyc, `syntax.Call` is a C static read, where `ast.Call` looks the name up in the
`ast` module (a generic attribute lookup) on every use: with the walk's own dispatch, a fifth of
what the compiled walk cost went there. Pure Python, the same lookup either way. Annotations
and module-level code keep `ast.X`. Written by scripts/gen_syntax.py (run it, do not edit)."""

from __future__ import annotations

import ast
from typing import Final

And: Final = ast.And
AnnAssign: Final = ast.AnnAssign
Assert: Final = ast.Assert
Assign: Final = ast.Assign
AsyncFor: Final = ast.AsyncFor
AsyncFunctionDef: Final = ast.AsyncFunctionDef
Attribute: Final = ast.Attribute
BinOp: Final = ast.BinOp
BitOr: Final = ast.BitOr
BoolOp: Final = ast.BoolOp
Call: Final = ast.Call
ClassDef: Final = ast.ClassDef
Compare: Final = ast.Compare
Constant: Final = ast.Constant
Delete: Final = ast.Delete
Dict: Final = ast.Dict
DictComp: Final = ast.DictComp
Eq: Final = ast.Eq
ExceptHandler: Final = ast.ExceptHandler
Expr: Final = ast.Expr
For: Final = ast.For
FunctionDef: Final = ast.FunctionDef
GeneratorExp: Final = ast.GeneratorExp
Global: Final = ast.Global
If: Final = ast.If
IfExp: Final = ast.IfExp
Import: Final = ast.Import
ImportFrom: Final = ast.ImportFrom
Is: Final = ast.Is
IsNot: Final = ast.IsNot
Lambda: Final = ast.Lambda
List: Final = ast.List
ListComp: Final = ast.ListComp
Load: Final = ast.Load
MatchValue: Final = getattr(ast, 'MatchValue', None)  # Python 3.10+ (None before)
Module: Final = ast.Module
Name: Final = ast.Name
Not: Final = ast.Not
NotEq: Final = ast.NotEq
NotIn: Final = ast.NotIn
Or: Final = ast.Or
Pass: Final = ast.Pass
Raise: Final = ast.Raise
Return: Final = ast.Return
Set: Final = ast.Set
SetComp: Final = ast.SetComp
Slice: Final = ast.Slice
Starred: Final = ast.Starred
Subscript: Final = ast.Subscript
Try: Final = ast.Try
Tuple: Final = ast.Tuple
UnaryOp: Final = ast.UnaryOp
While: Final = ast.While
With: Final = ast.With
arg: Final = ast.arg
comprehension: Final = ast.comprehension
expr: Final = ast.expr
stmt: Final = ast.stmt
