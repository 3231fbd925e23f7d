"""gui_harness: the GUI agent built on openprogram."""
