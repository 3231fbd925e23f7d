"""Pixels alone on a toolkit with no accessibility tree (issue 41): a Java Swing form in
the Metal look (its ATK bridge is off: the desktop has no bus), on Xvfb. The form's
text field has an etched border whose second line ran through the field's inside, so it
was a button; the gradient of a Metal button ran from "Cancel"'s last stem to its
border, so it was a drop-down; the selected tab's blue frame was taken for a link's
letters, so the tab strip was one link."""

from __future__ import annotations

import shutil

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Perception
from gui_harness.perception.ocr.ocr_worker import OcrWorker, rapidocr_reader

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("java") is None, reason="no Java runtime"),
]

FORM = """
import javax.swing.*;
import java.awt.*;

public class Form {
    public static void main(String[] args) {
        SwingUtilities.invokeLater(() -> {
            JFrame frame = new JFrame("Order");
            JTabbedPane tabs = new JTabbedPane();
            JPanel general = new JPanel(new GridBagLayout());
            GridBagConstraints c = new GridBagConstraints();
            c.insets = new Insets(6, 8, 6, 8);
            c.anchor = GridBagConstraints.WEST;
            c.gridx = 0; c.gridy = 0; general.add(new JLabel("Name:"), c);
            c.gridx = 1; general.add(new JTextField(18), c);
            c.gridx = 1; c.gridy = 1; general.add(new JCheckBox("Gift wrap"), c);
            JPanel buttons = new JPanel(new FlowLayout(FlowLayout.LEFT, 8, 0));
            buttons.add(new JButton("Apply"));
            buttons.add(new JButton("Cancel"));
            c.gridx = 1; c.gridy = 2; general.add(buttons, c);
            tabs.addTab("General", general);
            tabs.addTab("Advanced", new JPanel());
            frame.add(tabs);
            frame.setSize(520, 280);
            frame.setLocation(0, 0);
            frame.setDefaultCloseOperation(JFrame.EXIT_ON_CLOSE);
            frame.setVisible(true);
        });
    }
}
"""


def test_a_swing_form_s_field_and_buttons_from_pixels_alone(tmp_path):
    reader = rapidocr_reader()
    if reader is None:
        pytest.skip("rapidocr-onnxruntime is not installed")
    source = tmp_path / "Form.java"
    source.write_text(FORM)
    app = App(["java", str(source)], timeout=90.0, env={"HOME": str(tmp_path)})
    with VirtualDesktop((1280, 800), [app], accessibility=False) as desktop:
        desktop.wait_settled(timeout=10.0)
        image = desktop.screenshot()
    worker = OcrWorker(reader)
    try:
        seen = Perception(ocr=worker, first_look=60.0).perceive(image)
    finally:
        worker.close()
    named = {c.label: c for c in seen.components if c.label}
    assert named.get("Apply") is not None and named["Apply"].kind == "button", seen.text
    assert named.get("Cancel") is not None and named["Cancel"].kind == "button", seen.text
    fields = [c for c in seen.components if c.kind == "field" and c.caption == "Name:"]
    assert len(fields) == 1, seen.text
    # the field is the one right of its caption, on its row, not the tab strip's rest
    caption = named["Name:"]
    field = fields[0].box
    assert field[0] > caption.box[0] and field[1] <= caption.box[1] + caption.box[3], seen.text
    assert not [c for c in seen.components if c.kind == "link"], seen.text
