"""A dataset made in code: 10 classes of 28x28 grey images of drawn shapes, each with a random
position, scale, rotation, stroke intensity and noise. Deterministic for a given seed, no download.

    >>> images, labels = make_shapes(20, seed=0)
    >>> images.shape, images.dtype, sorted(set(labels.tolist())) == list(range(10))
    ((20, 1, 28, 28), dtype('float32'), True)
"""
import numpy as np

CLASSES = ("disk", "ring", "square", "frame", "triangle", "cross", "plus", "bar", "equals", "ell")
SIZE = 28


def _shape_mask(kind, u, v):
    """Coverage in [0, 1] of shape `kind` at normalised coordinates (u, v) (the shape spans about
    [-1, 1]), with a soft edge one pixel wide (d is a signed distance, negative inside)."""
    au, av = np.abs(u), np.abs(v)
    r = np.sqrt(u * u + v * v)
    stroke = 0.22
    if kind == "disk":
        d = r - 0.9
    elif kind == "ring":
        d = np.abs(r - 0.7) - stroke
    elif kind == "square":
        d = np.maximum(au, av) - 0.8
    elif kind == "frame":
        d = np.abs(np.maximum(au, av) - 0.7) - stroke
    elif kind == "triangle":
        # equilateral, pointing up: three half-planes
        d = np.maximum.reduce([-v - 0.6, 0.866 * u + 0.5 * v - 0.45, -0.866 * u + 0.5 * v - 0.45])
    elif kind == "cross":
        d1 = np.abs(u - v) / 1.414 - stroke
        d2 = np.abs(u + v) / 1.414 - stroke
        d = np.maximum(np.minimum(d1, d2), np.maximum(au, av) - 0.85)
    elif kind == "plus":
        d = np.maximum(np.minimum(au - stroke, av - stroke), np.maximum(au, av) - 0.95)
    elif kind == "bar":
        d = np.maximum(av - stroke * 1.3, au - 0.95)
    elif kind == "equals":
        d = np.maximum(np.abs(av - 0.45) - stroke * 0.9, au - 0.9)
    elif kind == "ell":
        vert = np.maximum(np.abs(u + 0.55) - stroke, av - 0.9)
        foot = np.maximum(np.abs(v + 0.7) - stroke, np.abs(u) - 0.85)
        d = np.minimum(vert, foot)
    else:
        raise ValueError(kind)
    return np.clip(0.5 - d * 6.0, 0.0, 1.0)


def make_shapes(n, seed=0):
    """n images (float32, shape (n, 1, 28, 28), values about in [0, 1]) and their int64 labels,
    the classes in turn so that every class appears equally often."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % len(CLASSES)
    rng.shuffle(labels)
    ys, xs = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) + 0.5
    images = np.empty((n, 1, SIZE, SIZE), np.float32)
    for i, c in enumerate(labels):
        scale = rng.uniform(6.0, 11.0)                       # half-size in pixels
        cx, cy = rng.uniform(scale + 1, SIZE - scale - 1, size=2)
        angle = rng.uniform(-0.5, 0.5)                       # about +-30 degrees
        ca, sa = np.cos(angle), np.sin(angle)
        dx, dy = (xs - cx) / scale, (cy - ys) / scale
        u = ca * dx + sa * dy
        v = -sa * dx + ca * dy
        ink = rng.uniform(0.6, 1.0)
        img = ink * _shape_mask(CLASSES[c], u, v)
        img += rng.normal(0.0, rng.uniform(0.05, 0.2), img.shape)
        images[i, 0] = img
    return images, labels.astype(np.int64)


def ascii_art(image):
    """A rough picture of one image, for looking at the data in a terminal."""
    chars = " .:-=+*#%@"
    img = np.clip(image.reshape(SIZE, SIZE), 0, 1)
    return "\n".join("".join(chars[int(p * 9.99)] for p in row) for row in img)


if __name__ == "__main__":
    imgs, labs = make_shapes(10, seed=1)
    for img, lab in zip(imgs, labs):
        print(CLASSES[lab])
        print(ascii_art(img))
