"""Exercise 3.3: find_text_attr(config, name), held-out answers (verl 0.9.1 get_hf_config_attr)."""

BRANCHES = ("text_config", "language_config", "thinker_config", "model_config")


def _text_of(node):
    getter = getattr(node, "get_text_config", None)
    text = getter() if callable(getter) else None
    return getattr(node, "text_config", None) if text is None else text


# WRONG ---------------------------------------------------------------
def w_bfs_root_first(config, name):
    # #7106's first version: a queue that reads the root first (the root's 1024 wins)
    queue, seen = [config], set()
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, name, None) is not None:
            return getattr(node, name)
        queue.extend(getattr(node, b, None) for b in BRANCHES)
    raise AttributeError(name)


def _post_order(config, name, *, truthy=False, guard=True, use_getter=True, branches=BRANCHES, pre=False):
    def text_of(node):
        return _text_of(node) if use_getter else getattr(node, "text_config", None)

    def has(node):
        value = getattr(node, name, None)
        return bool(value) if truthy else value is not None

    first = text_of(config)
    if first is not None and has(first):
        return getattr(first, name)
    seen = set()

    def walk(node):
        if node is None or (guard and id(node) in seen):
            return
        seen.add(id(node))
        if pre:
            yield node
        text = text_of(node)
        if text is not node:
            yield from walk(text)
        for b in branches:
            yield from walk(getattr(node, b, None))
        if not pre:
            yield node

    for node in walk(config):
        if has(node):
            return getattr(node, name)
    raise AttributeError(name)


def w_truthy(config, name):
    # treats 0 and False as absent
    return _post_order(config, name, truthy=True)


def w_no_cycle_guard(config, name):
    # no visited set: a config that contains itself recurses forever
    return _post_order(config, name, guard=False)


def w_no_getter(config, name):
    # ignores get_text_config(): a composite's text config held by no attribute is never read
    return _post_order(config, name, use_getter=False)


def w_pre_order(config, name):
    # reads each node before its branches: the root's value beats the text branch's
    return _post_order(config, name, pre=True)


def w_text_config_only(config, name):
    # only follows text_config: language_config / thinker_config branches are missed
    return _post_order(config, name, branches=("text_config",))


def w_all_subconfigs(config, name):
    # walks every sub-config, audio and vision siblings included
    seen = set()

    def walk(node):
        if id(node) in seen:
            return
        seen.add(id(node))
        for value in list(vars(node).values()):
            if hasattr(value, "__dict__") and not isinstance(value, type) and not callable(value):
                yield from walk(value)
        yield node

    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_returns_none(config, name):
    # returns None where verl raises AttributeError
    try:
        return _post_order(config, name)
    except AttributeError:
        return None


def w_hasattr_not_none(config, name):
    # hasattr counts a stored None as a value: None must mean absent
    first = _text_of(config)
    if first is not None and hasattr(first, name):
        return getattr(first, name)
    return _post_order(config, name)


def w_dict_lookup(config, name):
    # reads __dict__ only: a value served through attribute_map (an alias property) is missed
    def get(node):
        return vars(node).get(name) if hasattr(node, "__dict__") else None

    seen = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        text = _text_of(node)
        if text is not node:
            yield from walk(text)
        for b in BRANCHES:
            yield from walk(getattr(node, b, None))
        yield node

    first = _text_of(config)
    if first is not None and get(first) is not None:
        return get(first)
    for node in walk(config):
        if get(node) is not None:
            return get(node)
    raise AttributeError(name)


# RIGHT ---------------------------------------------------------------
def r_recursive_sentinel(config, name):
    missing = object()

    def value_of(node):
        v = getattr(node, name, None)
        return missing if v is None else v

    text = _text_of(config)
    if text is not None and value_of(text) is not missing:
        return value_of(text)
    visited = set()

    def search(node):
        if node is None or id(node) in visited:
            return missing
        visited.add(id(node))
        children = []
        t = _text_of(node)
        if t is not node:
            children.append(t)
        children += [getattr(node, b, None) for b in BRANCHES]
        for child in children:
            found = search(child)
            if found is not missing:
                return found
        return value_of(node)

    found = search(config)
    if found is missing:
        raise AttributeError(f"no {name!r} on the text branch of {type(config).__name__}")
    return found


def r_explicit_stack(config, name):
    def present(node):
        return node is not None and getattr(node, name, None) is not None

    head = _text_of(config)
    if present(head):
        return getattr(head, name)
    order, seen = [], set()
    stack = [(config, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        kids = []
        t = _text_of(node)
        if t is not node:
            kids.append(t)
        kids.extend(getattr(node, b, None) for b in BRANCHES)
        stack.extend((k, False) for k in reversed(kids))
    for node in order:
        if present(node):
            return getattr(node, name)
    raise AttributeError(name)


def r_collect_then_pick(config, name):
    nodes, seen = [], set()

    def visit(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        for child in [_text_of(node)] + [getattr(node, b, None) for b in BRANCHES]:
            if child is not node:
                visit(child)
        nodes.append(node)

    candidates = [_text_of(config)]
    visit(config)
    candidates += nodes
    values = [getattr(n, name, None) for n in candidates if n is not None]
    for value in values:
        if value is not None:
            return value
    raise AttributeError(f"{name} not found")


WRONG = {
    "BFS reading the root first": (w_bfs_root_first,),
    "0/False treated as absent": (w_truthy,),
    "no cycle guard": (w_no_cycle_guard,),
    "ignores get_text_config": (w_no_getter,),
    "node before its branches": (w_pre_order,),
    "text_config branch only": (w_text_config_only,),
    "walks every sub-config": (w_all_subconfigs,),
    "None instead of AttributeError": (w_returns_none,),
    "hasattr accepts a stored None": (w_hasattr_not_none,),
    "__dict__ lookup misses attribute_map": (w_dict_lookup,),
}
RIGHT = {
    "recursive with a sentinel": (r_recursive_sentinel,),
    "explicit post-order stack": (r_explicit_stack,),
    "collect every node then pick": (r_collect_then_pick,),
}
UNSURE = {}
