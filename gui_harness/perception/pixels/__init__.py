"""Pixels: what a screenshot shows, found by OpenCV without any app's help (DESIGN.md §8).

Outlines become controls (buttons, fields, check boxes, tabs, a spin box's arrows), the
remaining edges text lines, links and icons; a ruled table is one grid; web pages' rows,
alerts and icon runs are cut into their parts; a window manager's title bars are read as
title and buttons; after the first frame only the changed regions are detected again.
Start at detect.py's detect_components(), then _changes.py's Redetector.
"""

from gui_harness.perception.pixels.detect import detect_components

__all__ = ["detect_components"]
