"""Exercise 9.1's checker tests a contract: new wrong answers of other classes fail, right ones written otherwise pass.

Wrong classes: the augmented assignment's read missed (the old solution), text searches (a regex, tokens after a
dot), stores told apart by their statement instead of the parser's context (annotated, `for`, `with` targets,
unpacking), a name both read and stored dropped, scopes or places not visited (lambdas and comprehensions,
decorators and defaults, `try`/`with`/`match` bodies), names that are not attributes (a computed getattr's
variable, keyword arguments), qualified names, dunders skipped, chains on plain names only. Right answers: a
visitor with its own AugAssign case, a hand-made stack over the children, a sorted list, getattr's constant names
added, a context test by exclusion.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

from conftest import Wrong, checker_tests


def _loads(tree):
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def _augmented(tree):
    return {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }


def reads(source):
    tree = ast.parse(source)
    return _loads(tree) | _augmented(tree)


def load_context_only(source):
    return _loads(ast.parse(source))


def regex_without_assignments(source):
    return set(re.findall(r"\.\s*([A-Za-z_]\w*)\b(?!\s*=[^=])", source))


def tokens_after_a_dot(source):
    toks = [
        t
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type not in (tokenize.NL, tokenize.COMMENT)
    ]
    return {b.string for a, b, c in zip(toks, toks[1:], [*toks[2:], toks[-1]], strict=False)
            if a.string == "." and b.type == tokenize.NAME and c.string != "="}  # fmt: skip


def assign_statements_decide(source):
    tree = ast.parse(source)
    stored = {
        t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Attribute)
    }
    deleted = {
        t.attr for n in ast.walk(tree) if isinstance(n, ast.Delete) for t in n.targets if isinstance(t, ast.Attribute)
    }
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)} - stored - deleted


def reads_minus_stores(source):
    tree = ast.parse(source)
    stored = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)}
    return reads(source) - stored


def _walk_skipping(node, skip):
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, skip):
            yield from _walk_skipping(child, skip)


def _reads_skipping(skip):
    def answer(source):
        tree = ast.parse(source)
        nodes = list(_walk_skipping(tree, skip))
        return {n.attr for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)} | {
            n.target.attr for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
        }

    return answer


no_lambdas_or_comprehensions = _reads_skipping((ast.Lambda, ast.ListComp, ast.DictComp, ast.SetComp, ast.GeneratorExp))
no_try_with_match = _reads_skipping((ast.Try, ast.With, ast.AsyncWith, ast.Match))
no_async = _reads_skipping((ast.AsyncFunctionDef,))
no_f_strings = _reads_skipping((ast.JoinedStr,))


def bodies_only(source):
    """Visits a function's or class's body, never its decorators, defaults, annotations or bases."""
    found = set()

    class Reads(ast.NodeVisitor):
        def visit_FunctionDef(self, node):
            for stmt in node.body:
                self.visit(stmt)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_ClassDef(self, node):
            for stmt in node.body:
                self.visit(stmt)

        def visit_AugAssign(self, node):
            if isinstance(node.target, ast.Attribute):
                found.add(node.target.attr)
            self.generic_visit(node)

        def visit_Attribute(self, node):
            if isinstance(node.ctx, ast.Load):
                found.add(node.attr)
            self.generic_visit(node)

    Reads().visit(ast.parse(source))
    return found


def getattr_any_name(source):
    tree = ast.parse(source)
    names = {a.id if isinstance(a, ast.Name) else a.value
             for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "getattr"
             for a in n.args[1:2] if isinstance(a, ast.Name | ast.Constant)}  # fmt: skip
    return reads(source) | {n for n in names if isinstance(n, str)}


def keyword_names_too(source):
    tree = ast.parse(source)
    return reads(source) | {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) for k in n.keywords if k.arg}


def qualified_names(source):
    return {f"{ast.unparse(n.value)}.{n.attr}" for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}  # fmt: skip


def dunders_skipped(source):
    return {name for name in reads(source) if not name.startswith("__")}


def on_plain_names_only(source):
    tree = ast.parse(source)
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and not isinstance(n.ctx, ast.Store | ast.Del)} | _augmented(tree)  # fmt: skip


def imports_as_attributes(source):
    tree = ast.parse(source)
    dotted = {p for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names for p in a.name.split(".")[1:]}
    return reads(source) | dotted


WRONG = {
    "9.1": [
        Wrong(load_context_only, "augmented assignment", "x.a += 1 not counted (the old solution)"),
        Wrong(regex_without_assignments, ("string", "only assigned", "deleted", "you missed"), "a regex"),
        Wrong(tokens_after_a_dot, ("only assigned", "import", "deleted", "you missed"), "tokens after a dot"),
        Wrong(assign_statements_decide, ("only assigned", "you missed"), "stores known by the Assign statement"),
        Wrong(reads_minus_stores, "you missed", "a name read and stored elsewhere dropped"),
        Wrong(no_lambdas_or_comprehensions, "comprehension", "lambdas and comprehensions not entered"),
        Wrong(no_try_with_match, "you missed", "try/with/match not entered"),
        Wrong(no_async, "function body", "async functions not entered"),
        Wrong(no_f_strings, "f-string", "f-strings not entered"),
        Wrong(bodies_only, "decorator", "decorators, defaults, annotations and bases skipped"),
        Wrong(getattr_any_name, "plain variables", "getattr's computed name taken as an attribute"),
        Wrong(keyword_names_too, "keyword argument", "keyword argument names counted"),
        Wrong(qualified_names, "not an attribute read", "'cfg.mode' for 'mode'"),
        Wrong(dunders_skipped, "you missed", "dunder names skipped"),
        Wrong(on_plain_names_only, "you missed", "only x.name with x a plain name"),
        Wrong(imports_as_attributes, "import", "import os.path read as an attribute"),
    ],
}


def visitor(source):
    found = set()

    class Reads(ast.NodeVisitor):
        def visit_Attribute(self, node):
            if not isinstance(node.ctx, ast.Store | ast.Del):
                found.add(node.attr)
            self.generic_visit(node)

        def visit_AugAssign(self, node):
            if isinstance(node.target, ast.Attribute):
                found.add(node.target.attr)
            self.generic_visit(node)

    Reads().visit(ast.parse(source))
    return found


def stack(source):
    todo, found = [ast.parse(source)], []
    while todo:
        node = todo.pop()
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            found.append(node.target.attr)
        elif isinstance(node, ast.Attribute) and type(node.ctx) is ast.Load:
            found.append(node.attr)
        todo.extend(ast.iter_child_nodes(node))
    return sorted(set(found))


def with_constant_getattr(source):
    tree = ast.parse(source)
    return reads(source) | {n.args[1].value for n in ast.walk(tree)
                            if isinstance(n, ast.Call) and getattr(n.func, "id", "") in ("getattr", "hasattr")
                            and len(n.args) > 1 and isinstance(n.args[1], ast.Constant)}  # fmt: skip


RIGHT = {"9.1": [visitor, stack, with_constant_getattr, lambda s: tuple(sorted(reads(s)))]}

test_wrong_answers_fail_naming_the_mistake, test_right_answers_written_differently_pass = checker_tests(WRONG, RIGHT)
