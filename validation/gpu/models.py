"""Training-step programs for the GPU ground truth (issue 7), written in plain JAX + Optax.

Every program is one full training step in bf16 compute with fp32 master weights
(MaxText's default: weight_dtype float32, dtype bfloat16): forward, backward and an
Optax AdamW update. Shapes are fixed here so that the StableHLO exports, the measured
step times and the sharded lowerings all describe the same programs.
"""
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

BF16 = jnp.bfloat16
F32 = jnp.float32

# Llama-style decoders: RMSNorm, RoPE, SwiGLU, grouped-query attention, untied LM head.
LLAMA = {
    "llama-60m": dict(vocab=32000, dim=512, layers=8, heads=8, kv_heads=4, ffn=1536),
    "llama-250m": dict(vocab=32000, dim=1024, layers=16, heads=16, kv_heads=8, ffn=2816),
    "llama-900m": dict(vocab=32000, dim=2048, layers=16, heads=16, kv_heads=8, ffn=5632),
}
LLAMA_BATCH, LLAMA_SEQ = 8, 1024

# ResNets (v1.5: stride on the 3x3 convolution), NHWC, batch-norm in training mode.
RESNET = {
    "resnet18": dict(block="basic", stages=(2, 2, 2, 2)),
    "resnet50": dict(block="bottleneck", stages=(3, 4, 6, 3)),
}
RESNET_BATCH, RESNET_IMAGE, RESNET_CLASSES = 128, 224, 1000

OPTIMIZER = optax.adamw(learning_rate=3e-4, b1=0.9, b2=0.95, eps=1e-8, weight_decay=0.1)


def llama_param_count(c):
    d, f, h, kv = c["dim"], c["ffn"], c["heads"], c["kv_heads"]
    hd = d // h
    layer = 2 * d + d * h * hd + 2 * d * kv * hd + h * hd * d + 3 * d * f
    return 2 * c["vocab"] * d + d + c["layers"] * layer


def init_llama(key, c):
    d, f, h, kv = c["dim"], c["ffn"], c["heads"], c["kv_heads"]
    hd = d // h
    keys = iter(jax.random.split(key, 3 + 7 * c["layers"]))

    def w(shape):
        return jax.random.normal(next(keys), shape, F32) / math.sqrt(shape[0])

    layers = []
    for _ in range(c["layers"]):
        layers.append({
            "attn_norm": jnp.ones((d,), F32),
            "wq": w((d, h * hd)),
            "wk": w((d, kv * hd)),
            "wv": w((d, kv * hd)),
            "wo": w((h * hd, d)),
            "mlp_norm": jnp.ones((d,), F32),
            "w1": w((d, f)),
            "w3": w((d, f)),
            "w2": w((f, d)),
        })
    return {
        "embed": jax.random.normal(next(keys), (c["vocab"], d), F32) * 0.02,
        "layers": layers,
        "final_norm": jnp.ones((d,), F32),
        "lm_head": w((d, c["vocab"])),
    }


def rms_norm(x, g, eps=1e-6):
    xf = x.astype(F32)
    y = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + eps)
    return (y * g).astype(BF16)


def rope(x, positions, theta=10000.0):
    hd = x.shape[-1]
    inv = 1.0 / (theta ** (jnp.arange(0, hd, 2, dtype=F32) / hd))
    ang = positions.astype(F32)[:, None] * inv[None, :]
    cos = jnp.cos(ang)[None, :, None, :]
    sin = jnp.sin(ang)[None, :, None, :]
    x1, x2 = jnp.split(x.astype(F32), 2, axis=-1)
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1).astype(x.dtype)


def attention(x, p, c, positions):
    b, s, d = x.shape
    h, kv = c["heads"], c["kv_heads"]
    hd = d // h
    q = (x @ p["wq"].astype(BF16)).reshape(b, s, h, hd)
    k = (x @ p["wk"].astype(BF16)).reshape(b, s, kv, hd)
    v = (x @ p["wv"].astype(BF16)).reshape(b, s, kv, hd)
    q, k = rope(q, positions), rope(k, positions)
    k = jnp.repeat(k, h // kv, axis=2)
    v = jnp.repeat(v, h // kv, axis=2)
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k).astype(F32) / math.sqrt(hd)
    mask = jnp.tril(jnp.ones((s, s), dtype=jnp.bool_))
    scores = jnp.where(mask[None, None], scores, jnp.finfo(F32).min)
    probs = jax.nn.softmax(scores, axis=-1).astype(BF16)
    out = jnp.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b, s, h * hd)
    return out @ p["wo"].astype(BF16)


def mlp(x, p):
    gate = jax.nn.silu(x @ p["w1"].astype(BF16))
    return (gate * (x @ p["w3"].astype(BF16))) @ p["w2"].astype(BF16)


def llama_loss(params, tokens, targets, c):
    positions = jnp.arange(tokens.shape[1])
    x = jnp.take(params["embed"], tokens, axis=0).astype(BF16)
    for p in params["layers"]:
        x = x + attention(rms_norm(x, p["attn_norm"]), p, c, positions)
        x = x + mlp(rms_norm(x, p["mlp_norm"]), p)
    x = rms_norm(x, params["final_norm"])
    logits = (x @ params["lm_head"].astype(BF16)).astype(F32)
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))


def llama_program(name, key=None):
    """(step, args): step(params, opt_state, tokens, targets) -> (params, opt_state, loss)."""
    c = LLAMA[name]
    key = jax.random.PRNGKey(0) if key is None else key
    k1, k2, k3 = jax.random.split(key, 3)
    params = init_llama(k1, c)
    opt_state = OPTIMIZER.init(params)
    tokens = jax.random.randint(k2, (LLAMA_BATCH, LLAMA_SEQ), 0, c["vocab"], jnp.int32)
    targets = jax.random.randint(k3, (LLAMA_BATCH, LLAMA_SEQ), 0, c["vocab"], jnp.int32)

    def step(params, opt_state, tokens, targets):
        loss, grads = jax.value_and_grad(llama_loss)(params, tokens, targets, c)
        updates, opt_state = OPTIMIZER.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step, (params, opt_state, tokens, targets)


# ---------------------------------------------------------------- ResNets

def _conv_w(key, kh, kw, cin, cout):
    return jax.random.normal(key, (kh, kw, cin, cout), F32) * math.sqrt(2.0 / (kh * kw * cin))


def init_resnet(key, c):
    keys = iter(jax.random.split(key, 256))
    params, stats = {}, {}

    def bn(name, ch):
        params[name] = {"scale": jnp.ones((ch,), F32), "bias": jnp.zeros((ch,), F32)}
        stats[name] = {"mean": jnp.zeros((ch,), F32), "var": jnp.ones((ch,), F32)}

    params["stem"] = _conv_w(next(keys), 7, 7, 3, 64)
    bn("stem_bn", 64)
    cin = 64
    expansion = 4 if c["block"] == "bottleneck" else 1
    for si, n in enumerate(c["stages"]):
        width = 64 * 2 ** si
        for bi in range(n):
            stride = 2 if (bi == 0 and si > 0) else 1
            name = f"s{si}b{bi}"
            cout = width * expansion
            if c["block"] == "bottleneck":
                params[name + "_c1"] = _conv_w(next(keys), 1, 1, cin, width)
                bn(name + "_bn1", width)
                params[name + "_c2"] = _conv_w(next(keys), 3, 3, width, width)
                bn(name + "_bn2", width)
                params[name + "_c3"] = _conv_w(next(keys), 1, 1, width, cout)
                bn(name + "_bn3", cout)
            else:
                params[name + "_c1"] = _conv_w(next(keys), 3, 3, cin, width)
                bn(name + "_bn1", width)
                params[name + "_c2"] = _conv_w(next(keys), 3, 3, width, width)
                bn(name + "_bn2", width)
            if stride != 1 or cin != cout:
                params[name + "_proj"] = _conv_w(next(keys), 1, 1, cin, cout)
                bn(name + "_projbn", cout)
            cin = cout
    params["fc"] = {"w": jax.random.normal(next(keys), (cin, RESNET_CLASSES), F32) / math.sqrt(cin),
                    "b": jnp.zeros((RESNET_CLASSES,), F32)}
    return params, stats


def conv(x, w, stride):
    kh = w.shape[0]
    pad = ((kh // 2, kh // 2), (kh // 2, kh // 2))
    return jax.lax.conv_general_dilated(x, w.astype(BF16), (stride, stride), pad,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def batch_norm(x, p, s, new_stats, name, momentum=0.9, eps=1e-5):
    xf = x.astype(F32)
    mean = jnp.mean(xf, axis=(0, 1, 2))
    var = jnp.mean(jnp.square(xf - mean), axis=(0, 1, 2))
    new_stats[name] = {"mean": momentum * s[name]["mean"] + (1 - momentum) * mean,
                       "var": momentum * s[name]["var"] + (1 - momentum) * var}
    y = (xf - mean) * jax.lax.rsqrt(var + eps) * p[name]["scale"] + p[name]["bias"]
    return y.astype(BF16)


def resnet_forward(params, stats, images, c):
    new_stats = {}
    x = conv(images, params["stem"], 2)
    x = jax.nn.relu(batch_norm(x, params, stats, new_stats, "stem_bn"))
    x = jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                              ((0, 0), (1, 1), (1, 1), (0, 0)))
    for si, n in enumerate(c["stages"]):
        for bi in range(n):
            stride = 2 if (bi == 0 and si > 0) else 1
            name = f"s{si}b{bi}"
            shortcut = x
            if name + "_proj" in params:
                shortcut = batch_norm(conv(x, params[name + "_proj"], stride), params, stats, new_stats,
                                      name + "_projbn")
            if c["block"] == "bottleneck":
                y = jax.nn.relu(batch_norm(conv(x, params[name + "_c1"], 1), params, stats, new_stats, name + "_bn1"))
                y = jax.nn.relu(batch_norm(conv(y, params[name + "_c2"], stride), params, stats, new_stats,
                                           name + "_bn2"))
                y = batch_norm(conv(y, params[name + "_c3"], 1), params, stats, new_stats, name + "_bn3")
            else:
                y = jax.nn.relu(batch_norm(conv(x, params[name + "_c1"], stride), params, stats, new_stats,
                                           name + "_bn1"))
                y = batch_norm(conv(y, params[name + "_c2"], 1), params, stats, new_stats, name + "_bn2")
            x = jax.nn.relu(y + shortcut)
    x = jnp.mean(x.astype(F32), axis=(1, 2)).astype(BF16)
    logits = (x @ params["fc"]["w"].astype(BF16)).astype(F32) + params["fc"]["b"]
    return logits, new_stats


def resnet_loss(params, stats, images, labels, c):
    logits, new_stats = resnet_forward(params, stats, images, c)
    logp = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1)), new_stats


def resnet_program(name, key=None):
    """(step, args): step(params, opt_state, stats, images, labels) -> (params, opt_state, stats, loss)."""
    c = RESNET[name]
    key = jax.random.PRNGKey(0) if key is None else key
    k1, k2, k3 = jax.random.split(key, 3)
    params, stats = init_resnet(k1, c)
    opt_state = OPTIMIZER.init(params)
    images = jax.random.normal(k2, (RESNET_BATCH, RESNET_IMAGE, RESNET_IMAGE, 3), F32).astype(BF16)
    labels = jax.random.randint(k3, (RESNET_BATCH,), 0, RESNET_CLASSES, jnp.int32)

    def step(params, opt_state, stats, images, labels):
        (loss, new_stats), grads = jax.value_and_grad(resnet_loss, has_aux=True)(params, stats, images, labels, c)
        updates, opt_state = OPTIMIZER.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, new_stats, loss

    return step, (params, opt_state, stats, images, labels)


def program(name):
    if name in LLAMA:
        return llama_program(name)
    if name in RESNET:
        return resnet_program(name)
    raise KeyError(name)


PROGRAMS = ["llama-60m", "resnet50", "llama-250m", "resnet18", "llama-900m"]


def param_count(params):
    return int(sum(np.prod(x.shape) for x in jax.tree_util.tree_leaves(params)))
