"""Exercise 3.2: to_wire(routes, max_layers) / from_wire(payload, layer_count), held-out answers."""

import numpy as np
import torch


def _to_wire_ok(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    out = torch.zeros(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8)
    out[:, :, : payload.shape[2]] = payload
    return out


def _from_wire_ok(payload, layer_count):
    return payload[:, :, :layer_count].contiguous().view(torch.int16)


# WRONG ---------------------------------------------------------------
def w_to_wire_cast(routes, max_layers):
    # casts the values to uint8: ids above 255 wrap, and the last dim stays k
    b, s, layers, k = routes.shape
    out = torch.zeros(b, s, max_layers, k, dtype=torch.uint8)
    out[:, :, :layers] = routes.to(torch.uint8)
    return out


def w_from_wire_cast(payload, layer_count):
    # reads bytes as values: shape (.., 2k) and wrong ids
    return payload[:, :, :layer_count].to(torch.int16)


def w_to_wire_no_contiguous(routes, max_layers):
    # view(uint8) on a transposed view fails or reads the wrong memory order
    payload = routes.view(torch.uint8)
    out = torch.zeros(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8)
    out[:, :, : payload.shape[2]] = payload
    return out


def w_to_wire_pad_front(routes, max_layers):
    # pads before the layers: the routes must sit in the first L layers
    payload = routes.contiguous().view(torch.uint8)
    out = torch.zeros(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8)
    out[:, :, max_layers - payload.shape[2] :] = payload
    return out


def w_to_wire_int32_bytes(routes, max_layers):
    # widens to int32 before the byte view: 4k bytes per token-layer, not 2k
    payload = routes.to(torch.int32).contiguous().view(torch.uint8)
    out = torch.zeros(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8)
    out[:, :, : payload.shape[2]] = payload
    return out


def w_to_wire_big_endian(routes, max_layers):
    # writes the high byte first: the wire is little-endian memory order
    payload = routes.contiguous().view(torch.uint8)
    b, s, layers, two_k = payload.shape
    swapped = payload.reshape(b, s, layers, two_k // 2, 2).flip(-1).reshape(b, s, layers, two_k)
    out = torch.zeros(b, s, max_layers, two_k, dtype=torch.uint8)
    out[:, :, :layers] = swapped
    return out


def w_from_wire_no_strip(payload, layer_count):
    # keeps the padding layers
    return payload.contiguous().view(torch.int16)


def w_to_wire_empty_pad(routes, max_layers):
    # torch.empty for the padding: garbage instead of zeros
    payload = routes.contiguous().view(torch.uint8)
    out = torch.empty(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8).fill_(255)
    out[:, :, : payload.shape[2]] = payload
    return out


def w_from_wire_from_end(payload, layer_count):
    # takes the last layer_count layers: that is the padding, and -0 takes all
    return payload[:, :, -layer_count:].contiguous().view(torch.int16)


def w_to_wire_aliases_for_full(routes, max_layers):
    # returns a view of the routes when L == max_layers: not a new tensor, writes reach the routes
    if routes.shape[2] == max_layers and routes.is_contiguous():
        return routes.view(torch.uint8)
    return _to_wire_ok(routes, max_layers)


# RIGHT ---------------------------------------------------------------
def r_to_wire_pad(routes, max_layers):
    raw = routes.clone(memory_format=torch.contiguous_format).view(torch.uint8)
    return torch.nn.functional.pad(raw, (0, 0, 0, max_layers - raw.shape[2]))


def r_from_wire_clone(payload, layer_count):
    return payload[:, :, 0:layer_count, :].clone().view(torch.int16)


def r_to_wire_numpy(routes, max_layers):
    arr = routes.numpy().astype("<i2")
    b, s, layers, k = arr.shape
    raw = np.ascontiguousarray(arr).view(np.uint8).reshape(b, s, layers, 2 * k)
    out = np.zeros((b, s, max_layers, 2 * k), dtype=np.uint8)
    out[:, :, :layers] = raw
    return torch.from_numpy(out)


def r_from_wire_numpy(payload, layer_count):
    raw = np.ascontiguousarray(payload.numpy()[:, :, :layer_count])
    return torch.from_numpy(raw.view("<i2").copy())


def r_to_wire_cat(routes, max_layers):
    raw = routes.contiguous().view(torch.uint8)
    zeros = raw.new_zeros(raw.shape[0], raw.shape[1], max_layers - raw.shape[2], raw.shape[3])
    return torch.cat([raw, zeros], dim=2)


def r_from_wire_bytes_arith(payload, layer_count):
    part = payload[:, :, :layer_count].to(torch.int32)
    low, high = part[..., 0::2], part[..., 1::2]
    value = low | (high << 8)
    return torch.where(value >= 2**15, value - 2**16, value).to(torch.int16)


WRONG = {
    "values cast to uint8": (w_to_wire_cast, _from_wire_ok),
    "from_wire casts bytes": (_to_wire_ok, w_from_wire_cast),
    "padding in front": (w_to_wire_pad_front, _from_wire_ok),
    "int32 bytes on the wire": (w_to_wire_int32_bytes, _from_wire_ok),
    "big-endian bytes": (w_to_wire_big_endian, _from_wire_ok),
    "from_wire keeps the padding": (_to_wire_ok, w_from_wire_no_strip),
    "padding not zero": (w_to_wire_empty_pad, _from_wire_ok),
    "from_wire reads the last layers": (_to_wire_ok, w_from_wire_from_end),
    "to_wire aliases the routes when full": (w_to_wire_aliases_for_full, _from_wire_ok),
}
RIGHT = {
    "F.pad / slice-clone": (r_to_wire_pad, r_from_wire_clone),
    "numpy both ways": (r_to_wire_numpy, r_from_wire_numpy),
    "cat zeros / byte arithmetic": (r_to_wire_cat, r_from_wire_bytes_arith),
}
# view(uint8) of a non-contiguous int16 map keeps per-element byte order whenever the last dim has stride 1,
# so this may be right on every view the checker builds (slice, transposed, expanded): left unscored
UNSURE = {"no contiguous before view": (w_to_wire_no_contiguous, _from_wire_ok)}
