"""Exercise 3.3: find_text_attr(config, name), verl 0.9.1's get_hf_config_attr on the text branch."""

# The text (and verl 0.9.1 utils/megatron_utils.py::get_hf_config_attr): the text config (get_text_config() if
# callable and not None, else text_config); its own non-None value wins; else walk: a node's text config, then
# text_config, language_config, thinker_config, model_config (each walked the same way, before its parent), then the
# node; None is absent, 0 and False are values; never other sub-configs; survive cycles; AttributeError if none.

BRANCHES = ("text_config", "language_config", "thinker_config", "model_config")


def _text_of(node):
    getter = getattr(node, "get_text_config", None)
    if callable(getter):
        text = getter()
        if text is not None:
            return text
    return getattr(node, "text_config", None)


def _walk(node, seen, branches=BRANCHES, parent_first=False):
    if node is None or id(node) in seen:
        return
    seen.add(id(node))
    if parent_first:
        yield node
    text = _text_of(node)
    if text is not node:
        yield from _walk(text, seen, branches, parent_first)
    for b in branches:
        yield from _walk(getattr(node, b, None), seen, branches, parent_first)
    if not parent_first:
        yield node


# --- WRONG -----------------------------------------------------------------------------------------------------------


def w_root_first(config, name):
    # the root's own value first: the lesson's "root's own 1024"
    value = getattr(config, name, None)
    if value is not None:
        return value
    for node in _walk(config, set()):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_every_subconfig(config, name):
    # breadth-first over every attribute that looks like a config: reaches audio/vision siblings
    queue, seen = [config], set()
    while queue:
        node = queue.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if getattr(node, name, None) is not None:
            return getattr(node, name)
        for value in vars(node).values():
            if hasattr(value, "__dict__") and not isinstance(value, type):
                queue.append(value)
    raise AttributeError(name)


def w_truthy(config, name):
    # treats 0 and False as absent: the text says they are values
    text = _text_of(config)
    if text is not None and getattr(text, name, None):
        return getattr(text, name)
    for node in _walk(config, set()):
        if getattr(node, name, None):
            return getattr(node, name)
    raise AttributeError(name)


def w_hasattr(config, name):
    # hasattr: an attribute holding None is taken as the answer, not as absent
    text = _text_of(config)
    if text is not None and hasattr(text, name):
        return getattr(text, name)
    for node in _walk(config, set()):
        if hasattr(node, name):
            return getattr(node, name)
    raise AttributeError(name)


def w_no_cycle_guard(config, name):
    # no seen-set: a sub-config pointing back at the root recurses without end
    def walk(node):
        if node is None:
            return
        text = _text_of(node)
        if text is not None and text is not node:
            yield from walk(text)
        for b in BRANCHES:
            yield from walk(getattr(node, b, None))
        yield node

    text = _text_of(config)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    for node in walk(config):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_text_config_only(config, name):
    # ignores get_text_config(): a composite whose get_text_config returns a config no attribute holds is missed
    def walk(node, seen):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        for b in BRANCHES:
            yield from walk(getattr(node, b, None), seen)
        yield node

    text = getattr(config, "text_config", None)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    for node in walk(config, set()):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_text_only_no_walk(config, name):
    # reads the text config and stops: a value held only by the root or a wrapper is missed
    text = _text_of(config) or config
    value = getattr(text, name, None)
    if value is None:
        raise AttributeError(name)
    return value


def w_returns_none(config, name):
    # returns None when nothing has the attribute: the text says raise AttributeError
    text = _text_of(config)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    for node in _walk(config, set()):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    return None


def w_key_error(config, name):
    # raises KeyError, not AttributeError
    text = _text_of(config)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    for node in _walk(config, set()):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise KeyError(name)


def w_parent_first(config, name):
    # visits a node before its branches: a wrapper's value wins over its text branch's
    text = _text_of(config)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    for node in _walk(config, set(), parent_first=True):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_no_thinker(config, name):
    # forgets thinker_config: an Omni model's thinker.text_config is never reached
    text = _text_of(config)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    for node in _walk(config, set(), branches=("text_config", "language_config", "model_config")):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


def w_instance_dict(config, name):
    # reads vars(node) instead of getattr: an attribute_map alias (or a class attribute) is not in __dict__
    def read(node):
        return vars(node).get(name) if hasattr(node, "__dict__") else None

    text = _text_of(config)
    if text is not None and read(text) is not None:
        return read(text)
    for node in _walk(config, set()):
        if read(node) is not None:
            return read(node)
    raise AttributeError(name)


def w_branch_order(config, name):
    # walks model_config before text_config: another branch's value can win
    text = _text_of(config)
    if text is not None and getattr(text, name, None) is not None:
        return getattr(text, name)
    order = ("model_config", "thinker_config", "language_config", "text_config")
    for node in _walk(config, set(), branches=order):
        if getattr(node, name, None) is not None:
            return getattr(node, name)
    raise AttributeError(name)


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_explicit_stack(config, name):
    # post-order walk with an explicit stack instead of recursion
    def text_of(node):
        get = getattr(node, "get_text_config", None)
        found = get() if callable(get) else None
        return found if found is not None else getattr(node, "text_config", None)

    head = text_of(config)
    if head is not None:
        value = getattr(head, name, None)
        if value is not None:
            return value
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
        children = []
        text = text_of(node)
        if text is not None and text is not node:
            children.append(text)
        children += [getattr(node, b, None) for b in BRANCHES]
        stack.append((node, True))
        stack.extend((c, False) for c in reversed(children))
    raise AttributeError(f"no {name} on the text branch")


def r_order_list(config, name):
    # builds the whole visiting order first, then scans it
    order, seen = [], set()

    def visit(node):
        if node is None or id(node) in seen:
            return
        seen.add(id(node))
        text = _text_of(node)
        if text is not node:
            visit(text)
        for b in BRANCHES:
            visit(getattr(node, b, None))
        order.append(node)

    head = _text_of(config)
    candidates = [head] if head is not None else []
    visit(config)
    for node in candidates + order:
        value = getattr(node, name, None)
        if value is not None:
            return value
    raise AttributeError(name)


_MISSING = object()


def r_sentinel(config, name):
    # a sentinel default and a dict of visited ids; same order as verl
    def read(node):
        value = getattr(node, name, _MISSING)
        return _MISSING if value is None else value

    head = _text_of(config)
    if head is not None and read(head) is not _MISSING:
        return read(head)
    visited = {}

    def walk(node):
        if node is None or id(node) in visited:
            return _MISSING
        visited[id(node)] = node
        text = _text_of(node)
        for child in ([text] if text is not node else []) + [getattr(node, b, None) for b in BRANCHES]:
            found = walk(child)
            if found is not _MISSING:
                return found
        return read(node)

    found = walk(config)
    if found is _MISSING:
        raise AttributeError(name)
    return found


WRONG = {
    "root first": (w_root_first,),
    "every sub-config, breadth-first": (w_every_subconfig,),
    "0 and False as absent": (w_truthy,),
    "hasattr takes None": (w_hasattr,),
    "no cycle guard": (w_no_cycle_guard,),
    "text_config only, no get_text_config": (w_text_config_only,),
    "text config only, no walk": (w_text_only_no_walk,),
    "returns None when absent": (w_returns_none,),
    "KeyError": (w_key_error,),
    "parent before branches": (w_parent_first,),
    "no thinker_config": (w_no_thinker,),
    "instance __dict__ only": (w_instance_dict,),
    "branches in reverse order": (w_branch_order,),
}

RIGHT = {
    "explicit stack": (r_explicit_stack,),
    "order list, then scan": (r_order_list,),
    "sentinel, early return": (r_sentinel,),
}

UNSURE = {}
