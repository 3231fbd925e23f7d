"""OCR: the text drawn in components that have no label yet (DESIGN.md §8).

ocr.py runs tesseract on one line at a time and caches its answers; ocr_worker.py reads a
frame's unlabelled components off the step's critical path (tesseract or RapidOCR), each
crop line by line (_lines.py: a tile's two-line name, no read of a crop without text),
and names a pixel grid's cells after its headers (_grid_headers.py). Without an OCR engine
nothing fails: labels stay None. Start at ocr_worker.py's OcrWorker, then ocr.py's
read_text().
"""

from gui_harness.perception.ocr.ocr import label_with_ocr, ocr_available, read_text
from gui_harness.perception.ocr.ocr_worker import OcrWorker, rapidocr_reader

__all__ = ["OcrWorker", "label_with_ocr", "ocr_available", "rapidocr_reader", "read_text"]
