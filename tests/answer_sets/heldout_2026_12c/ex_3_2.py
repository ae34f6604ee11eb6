"""Exercise 3.2 answers: to_wire(routes, max_layers) / from_wire(payload, layer_count); args are (to_wire, from_wire)."""

import numpy as np
import torch
import torch.nn.functional as F


def _ref_to(routes, max_layers):
    b, s, layers, k = routes.shape
    out = torch.zeros(b, s, max_layers, 2 * k, dtype=torch.uint8)
    out[:, :, :layers] = routes.contiguous().view(torch.uint8)
    return out


def _ref_from(payload, layer_count):
    return payload[:, :, :layer_count].contiguous().view(torch.int16)


# --- wrong ---
def w_to_cast(routes, max_layers):
    # casts values to uint8 instead of viewing bytes: ids above 255 wrap, and the last dim is k, not 2k
    b, s, layers, k = routes.shape
    out = torch.zeros(b, s, max_layers, k, dtype=torch.uint8)
    out[:, :, :layers] = routes.to(torch.uint8)
    return out


def w_from_cast(payload, layer_count):
    # the matching wrong read: casts bytes back as values
    return payload[:, :, :layer_count].to(torch.int16)


def w_to_no_contiguous(routes, max_layers):
    # views the map as bytes without .contiguous(): works on every view whose last stride is 1 (slices, an expanded
    # batch, dims 0/1 transposed), raises on one whose last dim is strided (dims 2/3 transposed)
    b, s, layers, k = routes.shape
    out = torch.zeros(b, s, max_layers, 2 * k, dtype=torch.uint8)
    out[:, :, :layers] = routes.view(torch.uint8)
    return out


def w_from_no_contiguous(payload, layer_count):
    # views a slice of the payload without copying: torch allows it while the last stride is 1, and the result
    # shares the payload's memory
    return payload[:, :, :layer_count].view(torch.int16)


def w_to_pad_front(routes, max_layers):
    # zero padding before the routes, not after
    payload = routes.contiguous().view(torch.uint8)
    return F.pad(payload, (0, 0, max_layers - payload.shape[2], 0))


def w_to_pad_all_dims(routes, max_layers):
    # pads the last dim instead of the layer dim
    payload = routes.contiguous().view(torch.uint8)
    return F.pad(payload, (0, max_layers - payload.shape[2]))


def w_to_big_endian(routes, max_layers):
    # writes the high byte first: not the routes' bytes in memory order
    b, s, layers, k = routes.shape
    r = routes.to(torch.int32) & 0xFFFF
    hi, lo = (r >> 8).to(torch.uint8), (r & 0xFF).to(torch.uint8)
    pairs = torch.stack([hi, lo], dim=-1).reshape(b, s, layers, 2 * k)
    out = torch.zeros(b, s, max_layers, 2 * k, dtype=torch.uint8)
    out[:, :, :layers] = pairs
    return out


def w_from_big_endian(payload, layer_count):
    p = payload[:, :, :layer_count].to(torch.int32)
    hi, lo = p[..., 0::2], p[..., 1::2]
    v = (hi << 8) | lo
    return torch.where(v >= 32768, v - 65536, v).to(torch.int16)


def w_to_returns_view(routes, max_layers):
    # when no padding is needed, returns a view of the caller's routes: not a new tensor
    payload = routes.contiguous().view(torch.uint8)
    if payload.shape[2] == max_layers:
        return payload
    return _ref_to(routes, max_layers)


def w_to_ones_pad(routes, max_layers):
    # pads with 0xFF (an "empty" marker) instead of zeros
    out = _ref_to(routes, max_layers)
    out[:, :, routes.shape[2] :] = 255
    return out


def w_from_ignores_count(payload, layer_count):
    # returns every layer, padding included
    return payload.contiguous().view(torch.int16)


def w_to_int32_wire(routes, max_layers):
    # widens to int32 first: 4k bytes per layer
    b, s, layers, k = routes.shape
    out = torch.zeros(b, s, max_layers, 4 * k, dtype=torch.uint8)
    out[:, :, :layers] = routes.to(torch.int32).contiguous().view(torch.uint8)
    return out


def w_from_int32_wire(payload, layer_count):
    return payload[:, :, :layer_count].contiguous().view(torch.int32).to(torch.int16)


def w_to_zero_layers_crash(routes, max_layers):
    # guards L == 0 badly: returns an empty payload, not max_layers of zeros
    if routes.shape[2] == 0:
        return torch.empty(*routes.shape[:2], 0, 2 * routes.shape[3], dtype=torch.uint8)
    return _ref_to(routes, max_layers)


def w_from_in_place_payload(payload, layer_count):
    # clears the layers it has read from the caller's buffer, "consuming" them: the payload must be left as it was
    routes = payload[:, :, :layer_count].clone().view(torch.int16)
    payload[:, :, :layer_count] = 0
    return routes


# --- right ---
def r_to_numpy(routes, max_layers):
    b, s, layers, k = routes.shape
    raw = np.ascontiguousarray(routes.numpy()).astype("<i2").view(np.uint8).reshape(b, s, layers, 2 * k)
    padded = np.zeros((b, s, max_layers, 2 * k), dtype=np.uint8)
    padded[:, :, :layers] = raw
    return torch.from_numpy(padded)


def r_from_numpy(payload, layer_count):
    b, s, _, kk = payload.shape
    raw = np.ascontiguousarray(payload.numpy()[:, :, :layer_count])
    return torch.from_numpy(raw.view("<i2").reshape(b, s, layer_count, kk // 2).astype(np.int16))


def r_to_fpad(routes, max_layers):
    as_bytes = routes.clone(memory_format=torch.contiguous_format).view(torch.uint8)
    return F.pad(as_bytes, (0, 0, 0, max_layers - as_bytes.shape[2]), value=0)


def r_from_clone(payload, layer_count):
    return payload[:, :, 0:layer_count, :].clone(memory_format=torch.contiguous_format).view(torch.int16)


def r_to_cat(routes, max_layers):
    body = routes.contiguous().view(torch.uint8)
    b, s, layers, kk = body.shape
    pad = torch.zeros(b, s, max_layers - layers, kk, dtype=torch.uint8)
    return torch.cat([body, pad], dim=2)


def r_from_arith(payload, layer_count):
    # rebuilds each int16 from its little-endian byte pair arithmetically
    p = payload[:, :, :layer_count].to(torch.int32)
    v = p[..., 0::2] | (p[..., 1::2] << 8)
    return torch.where(v >= 0x8000, v - 0x10000, v).to(torch.int16)


WRONG = {
    "values cast to uint8": (w_to_cast, w_from_cast),
    "padding in front": (w_to_pad_front, _ref_from),
    "padding on the wrong dim": (w_to_pad_all_dims, _ref_from),
    "big-endian both ways": (w_to_big_endian, w_from_big_endian),
    "a view when no padding": (w_to_returns_view, _ref_from),
    "padded with 0xFF": (w_to_ones_pad, _ref_from),
    "from_wire keeps the padding": (_ref_to, w_from_ignores_count),
    "int32 on the wire": (w_to_int32_wire, w_from_int32_wire),
    "L == 0 gives an empty payload": (w_to_zero_layers_crash, _ref_from),
    "from_wire clears the layers it read": (_ref_to, w_from_in_place_payload),
}
RIGHT = {
    "numpy both ways": (r_to_numpy, r_from_numpy),
    "F.pad and clone": (r_to_fpad, r_from_clone),
    "cat and byte arithmetic": (r_to_cat, r_from_arith),
}
UNSURE = {
    # right unless the checker hands a view whose last dim is strided; "a transposed copy" does not say which dims
    "to_wire without contiguous": (w_to_no_contiguous, _ref_from),
    # right for every slice of a gathered buffer that keeps the last dim whole; returns a view into the payload
    "from_wire without contiguous": (_ref_to, w_from_no_contiguous),
}
