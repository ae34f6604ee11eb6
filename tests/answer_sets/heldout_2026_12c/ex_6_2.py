"""Exercise 6.2 answers: will_be_patched(imports, env_value) -> bool.

Toy world (notebook 06): toylib.model does `from toylib.ops import attention` when imported; toylib_adaptor
imports toylib.ops and replaces toylib.ops.attention; toyverl runs verl 0.9.1's hook: if the variable is
non-empty, split on "," and import each name. The script imports toylib.model last.
"""


def _named(env_value):
    return env_value.split(",") if env_value else []


# --- wrong ---
def w_ignores_env(imports, env_value):
    # only a direct import of the adaptor counts: toyverl's hook is forgotten
    for module in imports:
        if module == "toylib_adaptor":
            return True
        if module == "toylib.model":
            return False
    return False


def w_ignores_order(imports, env_value):
    # any adaptor import patches, even after toylib.model bound the vanilla op
    return "toylib_adaptor" in imports or ("toyverl" in imports and "toylib_adaptor" in _named(env_value))


def w_env_alone(imports, env_value):
    # the variable alone patches, even when toyverl is never imported
    if "toylib_adaptor" in _named(env_value):
        return True
    return w_ignores_env(imports, env_value)


def w_ops_first_blocks(imports, env_value):
    # thinks importing toylib.ops before the adaptor makes the patch too late
    for module in imports:
        if module == "toylib.ops":
            return False
        if module == "toylib_adaptor" or (module == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return True
        if module == "toylib.model":
            return False
    return False


def w_unset_is_image_default(imports, env_value):
    # treats an unset variable as the image's default (the adaptor): None means unset
    value = "toylib_adaptor" if env_value is None else env_value
    for module in imports:
        if module == "toylib_adaptor" or (module == "toyverl" and "toylib_adaptor" in _named(value)):
            return True
        if module == "toylib.model":
            return False
    return False


def w_toyverl_always_patches(imports, env_value):
    # thinks verl imports the adaptor itself, whatever the variable
    for module in imports:
        if module in ("toylib_adaptor", "toyverl"):
            return True
        if module == "toylib.model":
            return False
    return False


def w_returns_word(imports, env_value):
    # returns what forward() gives ("patched"/"vanilla"), not a bool
    for module in imports:
        if module == "toylib_adaptor" or (module == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return "patched"
        if module == "toylib.model":
            return "vanilla"
    return "vanilla"


def w_appends_model(imports, env_value):
    # appends the final import to the caller's list: `imports` must be left unchanged
    imports.append("toylib.model")
    for module in imports:
        if module == "toylib_adaptor" or (module == "toyverl" and "toylib_adaptor" in _named(env_value)):
            return True
        if module == "toylib.model":
            return False
    return False


def w_toylib_package_counts(imports, env_value):
    # thinks naming the package "toylib" (or toylib.ops) in the variable patches too
    named = _named(env_value)
    for module in imports:
        if module == "toylib_adaptor" or (module == "toyverl" and any(n.startswith("toylib") for n in named)):
            return True
        if module == "toylib.model":
            return False
    return False


def w_model_import_irrelevant_unless_last(imports, env_value):
    # only looks at the last import in the list
    if not imports:
        return False
    last = imports[-1]
    return last == "toylib_adaptor" or (last == "toyverl" and "toylib_adaptor" in _named(env_value))


# --- right ---
def r_index_compare(imports, env_value):
    names = (env_value or "").split(",")
    patch_points = []
    if "toylib_adaptor" in imports:
        patch_points.append(imports.index("toylib_adaptor"))
    if "toyverl" in imports and "toylib_adaptor" in names:
        patch_points.append(imports.index("toyverl"))
    if not patch_points:
        return False
    bound_at = imports.index("toylib.model") if "toylib.model" in imports else len(imports)
    return min(patch_points) < bound_at


def r_simulate_modules(imports, env_value):
    # simulates the import system: a dict of loaded modules and the op each binds
    loaded = {}
    ops = {"attention": "vanilla"}

    def load(name):
        if name in loaded:
            return
        if name == "toylib.ops":
            loaded[name] = True
        elif name == "toylib_adaptor":
            load("toylib.ops")
            ops["attention"] = "patched"
            loaded[name] = True
        elif name == "toylib.model":
            load("toylib.ops")
            loaded[name] = ops["attention"]
        elif name == "toyverl":
            loaded[name] = True
            if env_value:
                for extra in env_value.split(","):
                    load(extra)
        else:
            loaded[name] = True

    for name in list(imports) + ["toylib.model"]:
        load(name)
    return loaded["toylib.model"] == "patched"


def r_substring_in_value(imports, env_value):
    hook_patches = bool(env_value) and "toylib_adaptor" in env_value.split(",")
    seen_patch = False
    for name in imports:
        if name == "toylib.model":
            break
        if name == "toylib_adaptor" or (name == "toyverl" and hook_patches):
            seen_patch = True
            break
    return bool(seen_patch)


WRONG = {
    "env ignored": (w_ignores_env,),
    "order ignored": (w_ignores_order,),
    "env alone patches": (w_env_alone,),
    "ops import blocks": (w_ops_first_blocks,),
    "unset as image default": (w_unset_is_image_default,),
    "toyverl always patches": (w_toyverl_always_patches,),
    "returns a word": (w_returns_word,),
    "appends to imports": (w_appends_model,),
    "naming toylib patches": (w_toylib_package_counts,),
    "last import only": (w_model_import_irrelevant_unless_last,),
}
RIGHT = {
    "index comparison": (r_index_compare,),
    "simulated import system": (r_simulate_modules,),
    "loop with flag": (r_substring_in_value,),
}
UNSURE = {}
