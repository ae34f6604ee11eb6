"""3.3 find_text_attr(config, name): verl 0.9.1's get_hf_config_attr on the text branch."""
BRANCHES = ("text_config", "language_config", "thinker_config", "model_config")


def _text_of(node):
    getter = getattr(node, "get_text_config", None)
    text = getter() if callable(getter) else None
    return getattr(node, "text_config", None) if text is None else text


def _post_order(config):
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

    return walk(config)


# ---------------- wrong
def w_bfs_root_first(config, name):
    queue, seen = [config], set()
    while queue:
        node = queue.pop(0)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        value = getattr(node, name, None)
        if value is not None:
            return value
        queue.extend(getattr(node, b, None) for b in BRANCHES)
    raise AttributeError(name)


def w_falsy_absent(config, name):
    first = _text_of(config)
    if first is not None and getattr(first, name, None):
        return getattr(first, name)
    for node in _post_order(config):
        if getattr(node, name, None):
            return getattr(node, name)
    raise AttributeError(name)


def w_no_cycle_guard(config, name):
    def walk(node):
        if node is None:
            return
        text = _text_of(node)
        if text is not node:
            yield from walk(text)
        for b in BRANCHES:
            yield from walk(getattr(node, b, None))
        yield node

    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_text_config_attr_only(config, name):
    # ignores get_text_config(): only the text_config attribute is the text branch
    seen = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        for b in BRANCHES:
            yield from walk(getattr(node, b, None))
        yield node

    first = getattr(config, "text_config", None)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_every_sub_config(config, name):
    seen = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        text = _text_of(node)
        if text is not None and text is not node:
            yield from walk(text)
        for attr in sorted(vars(node)) if hasattr(node, "__dict__") else []:
            if attr.endswith("_config"):
                yield from walk(getattr(node, attr, None))
        yield node

    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_pre_order(config, name):
    seen = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        yield node  # the node before its branches
        text = _text_of(node)
        if text is not node:
            yield from walk(text)
        for b in BRANCHES:
            yield from walk(getattr(node, b, None))

    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_hasattr_presence(config, name):
    first = _text_of(config)
    if first is not None and hasattr(first, name):
        return getattr(first, name)
    for node in _post_order(config):
        if hasattr(node, name):
            return getattr(node, name)
    raise AttributeError(name)


def w_returns_none(config, name):
    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in _post_order(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    return None


def w_one_level(config, name):
    for node in (_text_of(config), *(getattr(config, b, None) for b in BRANCHES), config):
        if node is not None and getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_branch_order_reversed(config, name):
    seen = set()

    def walk(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        text = _text_of(node)
        if text is not node:
            yield from walk(text)
        for b in reversed(BRANCHES):
            yield from walk(getattr(node, b, None))
        yield node

    first = _text_of(config)
    if first is not None and getattr(first, name, None) is not None:
        return getattr(first, name)
    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


# ---------------- right
def r_recursive_return(config, name):
    seen = set()
    missing = object()

    def text_config_of(node):
        if callable(getattr(node, "get_text_config", None)):
            t = node.get_text_config()
            if t is not None:
                return t
        return getattr(node, "text_config", None)

    def search(node):
        if node is None or id(node) in seen:
            return missing
        seen.add(id(node))
        children = []
        t = text_config_of(node)
        if t is not node:
            children.append(t)
        children += [getattr(node, b, None) for b in BRANCHES]
        for child in children:
            found = search(child)
            if found is not missing:
                return found
        value = getattr(node, name, None)
        return missing if value is None else value

    top = text_config_of(config)
    if top is not None:
        value = getattr(top, name, None)
        if value is not None:
            return value
    found = search(config)
    if found is missing:
        raise AttributeError(f"no {name!r} on the text branch")
    return found


def r_iterative(config, name):
    text = _text_of(config)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    seen = set()
    stack = [(config, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            value = getattr(node, name, None)
            if value is not None:
                return value
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
        for kid in reversed(kids):
            stack.append((kid, False))
    raise AttributeError(name)


def r_list_then_scan(config, name):
    order = list(_post_order(config))
    head = _text_of(config)
    candidates = ([head] if head is not None else []) + order
    for node in candidates:
        value = getattr(node, name, None)
        if value is not None:
            return value
    raise AttributeError(f"{name} not found")


WRONG = {
    "root-first BFS over the four names (#7106's first version)": (w_bfs_root_first,),
    "falsy values treated as absent": (w_falsy_absent,),
    "no cycle guard": (w_no_cycle_guard,),
    "ignores get_text_config()": (w_text_config_attr_only,),
    "walks every *_config sub-config": (w_every_sub_config,),
    "node before its branches (pre-order)": (w_pre_order,),
    "hasattr as presence (None counts)": (w_hasattr_presence,),
    "returns None instead of raising": (w_returns_none,),
    "one level deep only": (w_one_level,),
    "branches in reverse order": (w_branch_order_reversed,),
}
RIGHT = {
    "recursive search with sentinel": (r_recursive_return,),
    "iterative post-order stack": (r_iterative,),
    "list the walk, then scan": (r_list_then_scan,),
}
