"""Exercise 3.3 answers: find_text_attr(config, name) as verl 0.9.1's get_hf_config_attr."""

from collections import deque

BRANCHES = ("text_config", "language_config", "thinker_config", "model_config")
_MISSING = object()


def _text_of(node):
    getter = getattr(node, "get_text_config", None)
    text = getter() if callable(getter) else None
    return text if text is not None else getattr(node, "text_config", None)


# --- wrong ---
def w_root_first(config, name):
    # reads the root before its text branch: the root's own value wins over the text config's
    value = getattr(config, name, None)
    if value is not None:
        return value
    for branch in BRANCHES:
        sub = getattr(config, branch, None)
        if sub is not None and getattr(sub, name, None) is not None:
            return getattr(sub, name)
    raise AttributeError(name)


def w_bfs_all_subconfigs(config, name):
    # breadth-first over every sub-config in vars(): an audio or talker sibling can answer
    queue, seen = deque([config]), set()
    while queue:
        node = queue.popleft()
        if id(node) in seen:
            continue
        seen.add(id(node))
        value = getattr(node, name, None)
        if value is not None:
            return value
        for child in vars(node).values() if hasattr(node, "__dict__") else ():
            if hasattr(child, "__dict__") and not isinstance(child, type):
                queue.append(child)
    raise AttributeError(name)


def _postorder(config):
    seen = set()

    def visit(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        text = _text_of(node)
        if text is not node:
            yield from visit(text)
        for branch in BRANCHES:
            yield from visit(getattr(node, branch, None))
        yield node

    return visit(config)


def w_truthiness(config, name):
    # `if value:` skips 0 and False, which are values
    first = _text_of(config)
    if first is not None and getattr(first, name, None):
        return getattr(first, name)
    for node in _postorder(config):
        if getattr(node, name, None):
            return getattr(node, name)
    raise AttributeError(name)


def w_hasattr(config, name):
    # hasattr counts a stored None as present: None means absent
    first = _text_of(config)
    if first is not None and hasattr(first, name):
        return getattr(first, name)
    for node in _postorder(config):
        if hasattr(node, name):
            return getattr(node, name)
    raise AttributeError(name)


def w_no_cycle_guard(config, name):
    # no `seen` set: a sub-config pointing back at the root recurses without end
    def visit(node):
        if node is None:
            return
        text = _text_of(node)
        if text is not node:
            yield from visit(text)
        for branch in BRANCHES:
            yield from visit(getattr(node, branch, None))
        yield node

    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in visit(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_returns_none(config, name):
    # returns None when nothing has it: AttributeError is asked for
    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in _postorder(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    return None


def w_only_text_config_attribute(config, name):
    # ignores get_text_config(): a composite whose text config no attribute holds answers from the root
    seen = set()

    def visit(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        for branch in BRANCHES:
            yield from visit(getattr(node, branch, None))
        yield node

    for node in visit(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_preorder(config, name):
    # visits a node before its branches: a composite's own value beats its language branch
    seen = set()

    def visit(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        yield node
        text = _text_of(node)
        if text is not node:
            yield from visit(text)
        for branch in BRANCHES:
            yield from visit(getattr(node, branch, None))

    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in visit(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_dict_lookup(config, name):
    # reads vars(node) instead of getattr: misses attribute_map aliases, properties and class attributes
    def get(node):
        return vars(node).get(name) if hasattr(node, "__dict__") else None

    first = _text_of(config)
    if first is not None and get(first) is not None:
        return get(first)
    for node in _postorder(config):
        if get(node) is not None:
            return get(node)
    raise AttributeError(name)


def w_no_thinker(config, name):
    # forgets thinker_config and model_config: an Omni model's text branch is never reached
    seen = set()

    def visit(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        text = _text_of(node)
        if text is not node:
            yield from visit(text)
        for branch in ("text_config", "language_config"):
            yield from visit(getattr(node, branch, None))
        yield node

    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in visit(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_key_error(config, name):
    # raises KeyError, not AttributeError
    for node in _postorder(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise KeyError(name)


# --- right ---
def r_recursive_sentinel(config, name):
    text = _text_of(config)
    if text is not None:
        value = getattr(text, name, None)
        if value is not None:
            return value
    seen = set()

    def search(node):
        if id(node) in seen:
            return _MISSING
        seen.add(id(node))
        own_text = _text_of(node)
        children = []
        if own_text is not None and own_text is not node:
            children.append(own_text)
        for branch in BRANCHES:
            child = getattr(node, branch, None)
            if child is not None and child is not own_text:
                children.append(child)
        for child in children:
            found = search(child)
            if found is not _MISSING:
                return found
        value = getattr(node, name, None)
        return _MISSING if value is None else value

    found = search(config)
    if found is _MISSING:
        raise AttributeError(f"no {name!r} on the text branch of {type(config).__name__}")
    return found


def r_collect_order_then_scan(config, name):
    # builds the whole visiting order first, then scans it
    order, seen = [], set()

    def collect(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        getter = getattr(node, "get_text_config", None)
        text = getter() if callable(getter) else None
        if text is None:
            text = getattr(node, "text_config", None)
        if text is not None and text is not node:
            collect(text)
        for branch in BRANCHES:
            child = getattr(node, branch, None)
            if child is not None:
                collect(child)
        order.append(node)

    head = _text_of(config)
    candidates = [head] if head is not None else []
    collect(config)
    for node in candidates + order:
        value = getattr(node, name, None)
        if value is not None:
            return value
    raise AttributeError(name)


def r_explicit_stack(config, name):
    # iterative post-order walk with an explicit stack
    head = _text_of(config)
    if head is not None and getattr(head, name, None) is not None:
        return getattr(head, name)
    seen = set()
    stack = [(config, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            value = getattr(node, name, None)
            if value is not None:
                return value
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        text = _text_of(node)
        children = [text] if text is not None and text is not node else []
        children += [getattr(node, b, None) for b in BRANCHES]
        for child in reversed([c for c in children if c is not None]):
            stack.append((child, False))
    raise AttributeError(name)


WRONG = {
    "root first": (w_root_first,),
    "BFS over every sub-config": (w_bfs_all_subconfigs,),
    "truthiness test": (w_truthiness,),
    "hasattr counts None": (w_hasattr,),
    "no cycle guard": (w_no_cycle_guard,),
    "None instead of AttributeError": (w_returns_none,),
    "ignores get_text_config": (w_only_text_config_attribute,),
    "pre-order": (w_preorder,),
    "vars() lookup": (w_dict_lookup,),
    "no thinker/model branch": (w_no_thinker,),
    "KeyError": (w_key_error,),
}
RIGHT = {
    "recursive with sentinel": (r_recursive_sentinel,),
    "collect order then scan": (r_collect_order_then_scan,),
    "explicit stack": (r_explicit_stack,),
}
UNSURE = {}
