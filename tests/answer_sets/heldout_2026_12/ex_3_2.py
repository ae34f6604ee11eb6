"""3.2 to_wire(routes, max_layers) / from_wire(payload, layer_count): int16 <-> uint8 bytes, layer-padded."""
import numpy as np
import torch
import torch.nn.functional as F


def ok_to_wire(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    out = torch.zeros(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8)
    out[:, :, : payload.shape[2]] = payload
    return out


def ok_from_wire(payload, layer_count):
    return payload[:, :, :layer_count].contiguous().view(torch.int16)


# ---------------- wrong
def w_from_value_cast(payload, layer_count):
    return payload[:, :, :layer_count].to(torch.int16)


def w_to_no_contiguous(routes, max_layers):
    payload = routes.view(torch.uint8)
    out = torch.zeros(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8)
    out[:, :, : payload.shape[2]] = payload
    return out


def w_to_pad_last_dim(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    return F.pad(payload, (0, 2 * (max_layers - routes.shape[2])))


def w_to_empty_padding(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    out = torch.empty(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8)
    out[:, :, : payload.shape[2]] = payload  # padding left as whatever the buffer held
    return out


def w_from_ignores_count(payload, layer_count):
    return payload.contiguous().view(torch.int16)


def w_to_int8(routes, max_layers):
    payload = routes.contiguous().view(torch.int8)
    out = torch.zeros(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.int8)
    out[:, :, : payload.shape[2]] = payload
    return out


def w_from_int8(payload, layer_count):
    return payload[:, :, :layer_count].contiguous().view(torch.int16)


def w_from_uint8_arithmetic(payload, layer_count):
    p = payload[:, :, :layer_count]
    return (p[..., 0::2] + p[..., 1::2] * 256).to(torch.int16)  # computed in uint8: wraps


def w_to_value_cast(routes, max_layers):
    # verl 0.9.0's value cast, twice as wide so the shape fits
    values = routes.to(torch.uint8).repeat_interleave(2, dim=-1)
    out = torch.zeros(*values.shape[:2], max_layers, values.shape[3], dtype=torch.uint8)
    out[:, :, : values.shape[2]] = values
    return out


def w_from_value_cast_pair(payload, layer_count):
    return payload[:, :, :layer_count, 0::2].to(torch.int16)


def w_to_pads_front(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    out = torch.zeros(*payload.shape[:2], max_layers, payload.shape[3], dtype=torch.uint8)
    if payload.shape[2]:
        out[:, :, -payload.shape[2]:] = payload  # padding before the layers
    return out


def w_from_last_layers(payload, layer_count):
    if layer_count == 0:
        return payload[:, :, :0].contiguous().view(torch.int16)
    return payload[:, :, -layer_count:].contiguous().view(torch.int16)


def w_to_max_layers_fixed(routes, max_layers):
    payload = routes.contiguous().view(torch.uint8)
    if payload.shape[2] == max_layers:
        return payload  # nothing to pad: send the view itself
    return torch.cat([payload, payload.new_zeros(*payload.shape[:2], max_layers - payload.shape[2], payload.shape[3])], 2)


def w_to_forgets_view(routes, max_layers):
    out = torch.zeros(*routes.shape[:2], max_layers, routes.shape[3], dtype=routes.dtype)
    out[:, :, : routes.shape[2]] = routes
    return out


def w_from_forgets_view(payload, layer_count):
    return payload[:, :, :layer_count].clone()


# ---------------- right
def r_pad(routes, max_layers):
    as_bytes = routes.contiguous().view(torch.uint8)
    return F.pad(as_bytes, (0, 0, 0, max_layers - routes.shape[2])).contiguous()


def r_pad_from(payload, layer_count):
    return payload.narrow(2, 0, layer_count).clone().view(torch.int16)


def r_numpy_to(routes, max_layers):
    arr = np.ascontiguousarray(routes.numpy()).view(np.uint8)
    arr = np.pad(arr, ((0, 0), (0, 0), (0, max_layers - arr.shape[2]), (0, 0)))
    return torch.from_numpy(np.ascontiguousarray(arr))


def r_numpy_from(payload, layer_count):
    arr = np.ascontiguousarray(payload.numpy()[:, :, :layer_count])
    return torch.from_numpy(arr.view(np.int16).copy())


def r_cat_to(routes, max_layers):
    b, s, layers, k = routes.shape
    raw = routes.clone(memory_format=torch.contiguous_format).view(torch.uint8)
    zeros = torch.zeros((b, s, max_layers - layers, 2 * k), dtype=torch.uint8)
    return torch.cat([raw, zeros], dim=2)


# ---------------- unsure: a self-consistent encoding that is not the bytes in memory order
def u_big_endian_to(routes, max_layers):
    r = routes.to(torch.int32) & 0xFFFF
    hi, lo = (r >> 8).to(torch.uint8), (r & 0xFF).to(torch.uint8)
    inter = torch.stack([hi, lo], dim=-1).flatten(-2)
    out = torch.zeros(*inter.shape[:2], max_layers, inter.shape[3], dtype=torch.uint8)
    out[:, :, : inter.shape[2]] = inter
    return out


def u_big_endian_from(payload, layer_count):
    p = payload[:, :, :layer_count].to(torch.int32)
    v = p[..., 0::2] * 256 + p[..., 1::2]
    return torch.where(v >= 32768, v - 65536, v).to(torch.int16)


WRONG = {
    "forgets the byte view (int16 on the wire)": (w_to_forgets_view, w_from_forgets_view),
    "from_wire: value cast .to(int16) (shape 2k)": (ok_to_wire, w_from_value_cast),
    "to_wire: .view(uint8) without .contiguous()": (w_to_no_contiguous, ok_from_wire),
    "to_wire: pads the last dim": (w_to_pad_last_dim, ok_from_wire),
    "to_wire: padding not zeroed": (w_to_empty_padding, ok_from_wire),
    "from_wire ignores layer_count": (ok_to_wire, w_from_ignores_count),
    "int8 instead of uint8 on the wire": (w_to_int8, w_from_int8),
    "from_wire: lo + hi*256 in uint8 arithmetic": (ok_to_wire, w_from_uint8_arithmetic),
    "value cast to uint8 (0.9.0's), duplicated bytes": (w_to_value_cast, w_from_value_cast_pair),
    "padding placed before the layers": (w_to_pads_front, w_from_last_layers),
}
RIGHT = {
    "F.pad + narrow().clone()": (r_pad, r_pad_from),
    "numpy byte views": (r_numpy_to, r_numpy_from),
    "cat with zeros": (r_cat_to, ok_from_wire),
}
UNSURE = {
    "big-endian bytes, consistent inverse": (u_big_endian_to, u_big_endian_from),
    "to_wire returns a view of routes when L == max_layers": (w_to_max_layers_fixed, ok_from_wire),
}
