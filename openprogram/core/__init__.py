"""The recorded data and the ambient state every other part stands on.

Start at dag.py: `ContextDAG`, whose `Node`s (node.py) are ordered by `seq`. values.py
says how a call's values are stored, image.py how images are kept once by hash, usage.py
what an exchange cost, _context.py which frame, session and runtime a call runs in.
"""

from .dag import ContextDAG, Effect, Expose, Node, RenderRange
from .image import Image, ImageRef
from .usage import Usage

__all__ = ["ContextDAG", "Effect", "Expose", "Image", "ImageRef", "Node", "RenderRange", "Usage"]
