"""Exercise 9.1: attribute_reads(source), the attribute names Python code reads."""

import ast
import io
import re
import tokenize

# The text: `self._x = cfg.a` reads a (not _x); `cfg.n += 1` reads n; `del cfg.b` is not a read; a set of str
# (a frozenset or a list without repeats passes); ast parses the source.

# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_every_attribute(source):
    # every attribute node, stores and deletes too
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}


def w_no_augmented(source):
    # loads only: `cfg.n += 1` reads n, but its node is a Store
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def w_regex(source):
    # a regex over the text: strings, comments, import paths and stores count
    return set(re.findall(r"\.\s*([A-Za-z_]\w*)", source))


def w_not_store(source):
    # "not a store" lets deletes through: `del cfg.b` is not a read
    tree = ast.parse(source)
    loads = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Store)}
    aug = {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }
    return loads | aug


def w_list_repeats(source):
    # a list with repeats: a name read twice is named twice
    tree = ast.parse(source)
    loads = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)]
    aug = [
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    ]
    return loads + aug


def w_with_names(source):
    # adds plain variable names
    tree = ast.parse(source)
    out = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    out |= {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }
    return out | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def w_with_keywords(source):
    # adds keyword argument names: `f(grad_offload=x)` reads no attribute grad_offload
    tree = ast.parse(source)
    out = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    out |= {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }
    return out | {n.arg for n in ast.walk(tree) if isinstance(n, ast.keyword) and n.arg}


def w_with_import_paths(source):
    # adds the dotted parts of imported module names
    tree = ast.parse(source)
    out = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    out |= {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for alias in n.names:
                out |= set(alias.name.split(".")[1:])
        if isinstance(n, ast.ImportFrom) and n.module:
            out |= set(n.module.split(".")[1:])
    return out


def w_getattr_argument(source):
    # adds getattr's second argument when it is a variable: a run-time name is never known
    tree = ast.parse(source)
    out = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    out |= {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr"):
            if len(n.args) >= 2 and isinstance(n.args[1], ast.Name):
                out.add(n.args[1].id)
    return out


class _NoDescend(ast.NodeVisitor):
    def __init__(self):
        self.names = set()

    def visit_Attribute(self, node):
        # forgets generic_visit: the inner b of a.b.c is never visited
        if isinstance(node.ctx, ast.Load):
            self.names.add(node.attr)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Attribute):
            self.names.add(node.target.attr)
        self.generic_visit(node)


def w_visitor_no_descend(source):
    # NodeVisitor whose visit_Attribute does not descend: chains lose their inner names
    v = _NoDescend()
    v.visit(ast.parse(source))
    return v.names


def w_top_level_only(source):
    # looks at module-level statements' direct expressions only (no ast.walk): function bodies are missed
    out = set()
    for stmt in ast.parse(source).body:
        for n in ast.iter_child_nodes(stmt):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
                out.add(n.attr)
    return out


def w_tokens(source):
    # tokenize: every NAME after a "." token, stores included
    out, prev = set(), None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and prev is not None and prev.type == tokenize.OP and prev.string == ".":
            out.add(tok.string)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            prev = tok
    return out


def w_dotted(source):
    # returns "obj.name" text, not the attribute names
    tree = ast.parse(source)
    return {ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


# --- RIGHT -----------------------------------------------------------------------------------------------------------


class _Reads(ast.NodeVisitor):
    def __init__(self):
        self.names = set()

    def visit_Attribute(self, node):
        if type(node.ctx) is ast.Load:
            self.names.add(node.attr)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Attribute):
            self.names.add(node.target.attr)
        self.generic_visit(node)


def r_visitor(source):
    # NodeVisitor that descends everywhere
    reader = _Reads()
    reader.visit(ast.parse(source))
    return reader.names


def r_walk_frozenset(source):
    # one pass of ast.walk; Load attributes and augmented attribute targets; a frozenset
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            found.add(node.target.attr)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            found.add(node.attr)
    return frozenset(found)


def r_recursive_list(source):
    # hand-written recursion over iter_child_nodes; a sorted list without repeats
    found = set()

    def visit(node):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            found.add(node.attr)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            found.add(node.target.attr)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return sorted(found)


WRONG = {
    "every attribute": (w_every_attribute,),
    "no augmented assignment": (w_no_augmented,),
    "regex over the text": (w_regex,),
    "not-a-store lets del through": (w_not_store,),
    "list with repeats": (w_list_repeats,),
    "plain names added": (w_with_names,),
    "keyword names added": (w_with_keywords,),
    "import paths added": (w_with_import_paths,),
    "getattr's variable added": (w_getattr_argument,),
    "visitor does not descend": (w_visitor_no_descend,),
    "top-level statements only": (w_top_level_only,),
    "tokens after a dot": (w_tokens,),
    "dotted text": (w_dotted,),
}

RIGHT = {
    "NodeVisitor": (r_visitor,),
    "ast.walk, frozenset": (r_walk_frozenset,),
    "recursion, sorted list": (r_recursive_list,),
}

UNSURE = {}
