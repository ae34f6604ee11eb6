"""Exercise 3.2: to_wire(routes, max_layers) / from_wire(payload, layer_count), pp_gather's dense wire format."""

import numpy as np
import torch
import torch.nn.functional as F

# The text: int16 routes (B, S, L, k) -> uint8 payload (B, S, max_layers, 2k) zero-padded on the layer dim only,
# the routes' bytes as a bit view (not a value cast: ids go above 255); from_wire gives back the exact int16 routes
# of the first layer_count layers. Views (a slice, a transposed copy) are accepted; L = 0 is in the domain.


def _to_wire(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    padded = payload.new_zeros(payload.shape[0], payload.shape[1], max_layers, payload.shape[3])
    padded[:, :, : payload.shape[2]] = payload
    return padded


def _from_wire(payload, layer_count):
    return payload[:, :, :layer_count].contiguous().view(torch.int16)


# --- WRONG (each pairs one mistaken function with the other side right) ---------------------------------------------


def w_to_value_cast(routes, max_layers):
    # value cast to uint8, then two bytes per id by repeating: ids above 255 wrap
    low = routes.to(torch.uint8)
    payload = torch.stack([low, torch.zeros_like(low)], dim=-1).flatten(-2)
    padded = payload.new_zeros(*payload.shape[:2], max_layers, payload.shape[3])
    padded[:, :, : payload.shape[2]] = payload
    return padded


def w_to_big_endian(routes, max_layers):
    # high byte first: not the routes' bytes in memory order
    r = routes.to(torch.int32)
    payload = torch.stack([(r >> 8) & 0xFF, r & 0xFF], dim=-1).flatten(-2).to(torch.uint8)
    padded = payload.new_zeros(*payload.shape[:2], max_layers, payload.shape[3])
    padded[:, :, : payload.shape[2]] = payload
    return padded


def w_to_pad_front(routes, max_layers):
    # zeros put before the layers, not after
    payload = routes.contiguous().view(torch.uint8)
    return F.pad(payload, (0, 0, max_layers - payload.shape[2], 0))


def w_to_empty(routes, max_layers):
    # torch.empty for the padding: garbage, not zeros
    payload = routes.contiguous().view(torch.uint8)
    padded = torch.empty(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8).fill_(7)
    padded[:, :, : payload.shape[2]] = payload
    return padded


def w_to_flat(routes, max_layers):
    # flattens layers and bytes into one dim: (B, S, max_layers * 2k)
    return _to_wire(routes, max_layers).flatten(2)


def w_to_byte_axis(routes, max_layers):
    # keeps the two bytes on their own axis: (B, S, max_layers, k, 2)
    return _to_wire(routes, max_layers).unflatten(-1, (routes.shape[-1], 2))


def w_to_pads_k(routes, max_layers):
    # pads the last (byte) dim, not the layer dim
    payload = routes.contiguous().view(torch.uint8)
    return F.pad(payload, (0, 2 * (max_layers - payload.shape[2])))


def w_from_no_strip(payload, layer_count):
    # forgets to strip the padding: returns max_layers layers
    return payload.contiguous().view(torch.int16)


def w_from_swapped_bytes(payload, layer_count):
    # combines the bytes high-first: wrong ids above 255
    p = payload[:, :, :layer_count].to(torch.int32)
    return ((p[..., 0::2] << 8) | p[..., 1::2]).to(torch.int16)


def w_from_value_cast(payload, layer_count):
    # a value cast of the bytes: (B, S, L, 2k) int16 of single bytes
    return payload[:, :, :layer_count].to(torch.int16)


def w_from_low_byte(payload, layer_count):
    # keeps only the low byte: ids above 255 lose their high byte
    return payload[:, :, :layer_count, 0::2].to(torch.int16)


def _right_to(routes, max_layers):
    return _to_wire(routes, max_layers)


def _right_from(payload, layer_count):
    return _from_wire(payload, layer_count)


# --- RIGHT -----------------------------------------------------------------------------------------------------------


def r_to_arith(routes, max_layers):
    # bytes by arithmetic: low byte, then high byte (little-endian), into a zeroed payload
    r = routes.to(torch.int32) & 0xFFFF
    pairs = torch.stack([r & 0xFF, r >> 8], dim=-1).flatten(-2).to(torch.uint8)
    b, s, layers, width = pairs.shape
    out = torch.zeros((b, s, max_layers, width), dtype=torch.uint8)
    out[:, :, :layers] = pairs
    return out


def r_from_arith(payload, layer_count):
    # low | high << 8 in int32, then the 16-bit pattern back to int16
    p = payload[:, :, :layer_count].to(torch.int32)
    value = p[..., 0::2] | (p[..., 1::2] << 8)
    value = torch.where(value >= 2**15, value - 2**16, value)
    return value.to(torch.int16)


def r_to_pad(routes, max_layers):
    # a bit view of a contiguous clone, padded with F.pad on the layer dim
    payload = routes.clone(memory_format=torch.contiguous_format).view(torch.uint8)
    return F.pad(payload, (0, 0, 0, max_layers - payload.shape[2]))


def r_from_narrow_clone(payload, layer_count):
    # narrow, a contiguous copy, then the bit view
    return payload.narrow(2, 0, layer_count).clone(memory_format=torch.contiguous_format).view(torch.int16)


def r_to_numpy(routes, max_layers):
    # numpy's little-endian int16 bytes, padded with np.pad
    arr = np.ascontiguousarray(routes.numpy()).astype("<i2").view(np.uint8)
    arr = np.pad(arr, ((0, 0), (0, 0), (0, max_layers - arr.shape[2]), (0, 0)))
    return torch.from_numpy(arr.copy())


def r_from_numpy(payload, layer_count):
    # numpy: slice, copy, view as little-endian int16
    arr = np.ascontiguousarray(payload.numpy()[:, :, :layer_count]).view("<i2")
    return torch.from_numpy(arr.astype(np.int16))


WRONG = {
    "to: value cast": (w_to_value_cast, _right_from),
    "to: big-endian bytes": (w_to_big_endian, _right_from),
    "to: padding in front": (w_to_pad_front, _right_from),
    "to: garbage padding": (w_to_empty, _right_from),
    "to: flattened payload": (w_to_flat, _right_from),
    "to: byte axis kept": (w_to_byte_axis, _right_from),
    "to: padded on the byte dim": (w_to_pads_k, _right_from),
    "from: padding kept": (_right_to, w_from_no_strip),
    "from: bytes swapped": (_right_to, w_from_swapped_bytes),
    "from: value cast": (_right_to, w_from_value_cast),
    "from: low byte only": (_right_to, w_from_low_byte),
}

RIGHT = {
    "byte arithmetic both ways": (r_to_arith, r_from_arith),
    "F.pad / narrow clone": (r_to_pad, r_from_narrow_clone),
    "numpy both ways": (r_to_numpy, r_from_numpy),
}


def u_to_shared_when_full(routes, max_layers):
    # for a contiguous stage already at max_layers, returns the bit view of the caller's routes (shares memory):
    # the routes are left as they were, but the contract says "a new" uint8 tensor; is a view new?
    payload = routes.contiguous().view(torch.uint8)
    if payload.shape[2] == max_layers:
        return payload
    return _to_wire(routes, max_layers)


def u_from_view(payload, layer_count):
    # from_wire as a bit view of the payload's slice when it is contiguous (shares the payload's memory)
    part = payload[:, :, :layer_count]
    return part.view(torch.int16) if part.is_contiguous() else part.contiguous().view(torch.int16)


def u_to_no_contiguous(routes, max_layers):
    # .view(torch.uint8) with no .contiguous(): works on any view whose last dim has stride 1 (a batch slice, a
    # transposed copy of the outer dims, an expanded batch) and raises only when the k dim itself is strided; the
    # text's "a transposed copy" does not say which dims are transposed
    payload = routes.view(torch.uint8)
    padded = payload.new_zeros(*payload.shape[:2], max_layers, payload.shape[3])
    padded[:, :, : payload.shape[2]] = payload
    return padded


UNSURE = {
    "to_wire views without contiguous()": (u_to_no_contiguous, _right_from),
    "to_wire shares memory with full-height contiguous routes": (u_to_shared_when_full, _right_from),
    "from_wire shares memory with a contiguous payload": (_right_to, u_from_view),
}
