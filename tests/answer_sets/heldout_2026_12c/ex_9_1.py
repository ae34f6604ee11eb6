"""Exercise 9.1 answers: attribute_reads(source) -> set of attribute names the code reads."""

import ast
import io
import re
import tokenize


# --- wrong ---
def w_loads_only(source):
    # forgets the augmented assignment: `cfg.n += 1` reads n
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def w_every_attribute(source):
    # every attribute node, stores and deletes included
    return {n.attr for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Attribute)}


def w_regex(source):
    # a regex over the text: strings, comments, imports, stores and `1.e5` all count
    return set(re.findall(r"\.\s*([A-Za-z_]\w*)", source))


def w_tokens_after_dot(source):
    # tokenize: skips strings and comments, but stores, deletes and `import a.b` still count
    names, prev = set(), None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and prev is not None and prev.type == tokenize.OP and prev.string == ".":
            names.add(tok.string)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            prev = tok
    return names


def w_outermost_only(source):
    # takes only the outermost attribute of a chain: `a.b.c` reads b too
    tree = ast.parse(source)
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    return {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and id(n) not in inner
    }


def w_skips_del_statements(source):
    # skips whole `del` statements: `del a.b.c` still reads b
    tree = ast.parse(source)
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Delete):
            skip.update(id(n) for n in ast.walk(node))
    out = {
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load) and id(n) not in skip
    }
    out |= {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }
    return out


def w_list_with_repeats(source):
    # a list that names an attribute once per read
    tree = ast.parse(source)
    out = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)]
    out += [
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    ]
    return out


def w_top_level_statements(source):
    # looks only at module-level statements' own expressions: function and class bodies are missed
    out = set()
    for stmt in ast.parse(source).body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for n in ast.walk(stmt):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
                out.add(n.attr)
        if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Attribute):
            out.add(stmt.target.attr)
    return out


def w_with_names(source):
    # adds plain variable names too
    tree = ast.parse(source)
    out = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    out |= {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }
    return out | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def w_getattr_variable(source):
    # adds getattr's second argument even when it is a variable: a computed name is never known
    tree = ast.parse(source)
    out = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}
    out |= {
        n.target.attr for n in ast.walk(tree) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Attribute)
    }
    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ("getattr", "hasattr")
            and len(n.args) > 1
        ):
            arg = n.args[1]
            out.add(arg.value if isinstance(arg, ast.Constant) else getattr(arg, "id", ""))
    return out


def w_dotted_unparse(source):
    # returns whole dotted expressions ("self.cfg.a"), not attribute names
    tree = ast.parse(source)
    return {ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


# --- right ---
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


def r_node_visitor(source):
    visitor = _Reads()
    visitor.visit(ast.parse(source))
    return visitor.names


def r_recursive_children(source):
    found = []

    def walk(node, augmented_target=False):
        if isinstance(node, ast.Attribute) and (isinstance(node.ctx, ast.Load) or augmented_target):
            if node.attr not in found:
                found.append(node.attr)
        for field, child in ast.iter_fields(node):
            children = child if isinstance(child, list) else [child]
            for c in children:
                if isinstance(c, ast.AST):
                    walk(c, augmented_target=isinstance(node, ast.AugAssign) and field == "target")

    walk(ast.parse(source))
    return found


def r_frozenset_walk(source):
    tree = ast.parse(source)
    reads = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign):
            target = node.target
            if isinstance(target, ast.Attribute):
                reads.add(target.attr)
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, (ast.Store, ast.Del)):
            reads.add(node.attr)
    return frozenset(reads)


# --- unsure ---
def u_with_constant_getattr(source):
    # also returns getattr/hasattr's constant names: the docstring says they may be returned or not
    names = set(r_node_visitor(source))
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "hasattr"):
            if len(n.args) > 1 and isinstance(n.args[1], ast.Constant) and isinstance(n.args[1].value, str):
                names.add(n.args[1].value)
    return names


WRONG = {
    "Load only, no AugAssign": (w_loads_only,),
    "every Attribute": (w_every_attribute,),
    "regex": (w_regex,),
    "tokens after a dot": (w_tokens_after_dot,),
    "outermost of a chain": (w_outermost_only,),
    "del statements skipped": (w_skips_del_statements,),
    "list with repeats": (w_list_with_repeats,),
    "top-level statements only": (w_top_level_statements,),
    "plain names added": (w_with_names,),
    "getattr variable added": (w_getattr_variable,),
    "dotted expressions": (w_dotted_unparse,),
}
RIGHT = {
    "NodeVisitor": (r_node_visitor,),
    "recursive list without repeats": (r_recursive_children,),
    "frozenset walk": (r_frozenset_walk,),
}
UNSURE = {
    "getattr constants included": (u_with_constant_getattr,),
}
