"""The stylesheet every view inlines (notebook outputs and reports carry no files).

Everything is scoped under `.opv`, with explicit colours, so a notebook's dark theme or
a page's own CSS neither leaks in nor out.
"""

from __future__ import annotations

__all__ = ["STYLE"]

STYLE = """<style>
.opv{--ok:#1a7f37;--err:#cf222e;--run:#9a6700;--stop:#bc4c00;--wait:#0969da;--unk:#8250df;--off:#6e7781;--line:#d0d7de;--soft:#f6f8fa;
--ink:#1f2328;--mute:#59636e;--accent:#0969da;color:var(--ink);background:#fff;
font:13px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;
border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:4px 0;max-width:100%;
box-sizing:border-box;text-align:left}
.opv *{box-sizing:border-box}
.opv pre,.opv code,.opv .opv-mono{
font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.opv pre{white-space:pre-wrap;word-break:break-word;margin:2px 0;padding:6px 8px;
background:var(--soft);border-radius:6px;max-height:320px;overflow:auto;color:var(--ink)}
.opv-head{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:baseline;margin-bottom:6px}
.opv-title{font-weight:600;font-size:14px}
.opv-stat{color:var(--mute)}.opv-stat b{color:var(--ink);font-weight:600}
.opv-facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 10px;margin:4px 0 8px}
.opv-facts dt{color:var(--mute)}.opv-facts dd{margin:0}
.opv-bar{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:6px 0}
.opv-bar input{font:inherit;padding:3px 6px;border:1px solid var(--line);border-radius:6px;
min-width:220px;color:var(--ink);background:#fff}
.opv button{font:inherit;font-size:12px;padding:2px 8px;border:1px solid var(--line);
border-radius:6px;background:var(--soft);color:var(--ink);cursor:pointer}
.opv button:hover{border-color:var(--accent)}
.opv-row{display:flex;gap:8px;align-items:baseline;padding:2px 4px;border-radius:4px;
cursor:pointer;white-space:nowrap;overflow:hidden}
.opv-row:hover{background:var(--soft)}.opv-row.opv-open{background:#ddf4ff}
.opv-row.opv-hit{outline:2px solid #bf8700}
.opv-caret{display:inline-block;width:14px;color:var(--mute);text-align:center;flex:none}
.opv-dot{width:9px;height:9px;border-radius:50%;display:inline-block;flex:none;
align-self:center;background:var(--off)}
.opv-s-c .opv-dot{background:var(--ok)}.opv-s-e .opv-dot{background:var(--err)}
.opv-s-r .opv-dot{background:var(--run)}.opv-s-x .opv-dot{background:var(--off)}
.opv-s-s .opv-dot{background:var(--stop)}.opv-s-s>.opv-name{color:var(--stop)}
.opv-s-w .opv-dot{background:var(--wait)}.opv-s-w>.opv-name{color:var(--wait)}
.opv-wait{color:var(--wait)}
.opv-s-u .opv-dot{background:var(--unk)}.opv-s-u>.opv-name{color:var(--unk)}
.opv-unk{color:var(--unk)}
.opv-questions{border-left:3px solid var(--wait);padding:2px 8px;margin:4px 0 8px}
.opv-questions ul{margin:2px 0;padding-left:18px}.opv-q{font-weight:600}
.opv-s-e>.opv-name{color:var(--err)}
.opv-name{font-weight:600}.opv-k{color:var(--mute);font-weight:400}
.opv-tag{font-size:11px;padding:0 5px;border-radius:8px;border:1px solid var(--line);
color:var(--mute)}
.opv-tag-llm{border-color:#8250df;color:#8250df}.opv-tag-user{border-color:#bf3989;color:#bf3989}
.opv-tag-xh{border-color:#6e7781;color:#6e7781;border-style:dashed}
.opv-tag-xl,.opv-tag-xf{border-color:#0969da;color:#0969da}
.opv-tag-tool{border-color:#1a7f37;color:#1a7f37}
.opv-num{color:var(--mute);font-variant-numeric:tabular-nums}
.opv-roll{color:#8250df}
.opv-prev{color:var(--mute);overflow:hidden;text-overflow:ellipsis;min-width:0}
.opv-kids{margin-left:10px;padding-left:8px;border-left:1px solid var(--line)}
.opv-detail{margin:4px 0 8px 22px;padding:8px 10px;border:1px solid var(--line);border-radius:6px}
.opv-label{color:var(--mute);font-size:11px;text-transform:uppercase;letter-spacing:.04em;
margin-top:6px}
.opv-err{color:var(--err)}
.opv-meta{color:var(--mute);font-size:12px}
.opv-thumbs{display:flex;flex-wrap:wrap;gap:6px;margin:4px 0}
.opv-thumbs img{max-width:100%;border:1px solid var(--line);border-radius:4px;cursor:zoom-in;
background:#fff}
.opv-lb{position:fixed;inset:0;z-index:10000;background:rgba(15,20,25,.92);display:flex;
flex-direction:column;outline:none}
.opv-lb[hidden]{display:none}
.opv-lb-bar{display:flex;gap:8px;align-items:center;padding:6px 10px;background:#fff;
border-bottom:1px solid var(--line);flex-wrap:wrap}
.opv-lb-gap{flex:1}
.opv-lb-body{flex:1;overflow:auto;padding:8px;text-align:center}
.opv-lb-body img{image-rendering:auto;background:#fff;cursor:zoom-in}
.opv button.opv-on{background:#fff;border-color:var(--accent);color:var(--accent)}
.opv button:disabled{opacity:.4;cursor:default}
.opv-noimg{display:inline-block;padding:10px;border:1px dashed var(--line);border-radius:4px;
color:var(--mute);font-size:12px}
.opv-tabs{display:flex;gap:4px;margin:6px 0 4px;flex-wrap:wrap}
.opv-tabs button.opv-on{background:#fff;border-color:var(--accent);color:var(--accent)}
.opv-msg{border-left:3px solid var(--line);padding:2px 0 2px 8px;margin:6px 0}
.opv-msg-system{border-color:#bf8700}.opv-msg-user{border-color:var(--accent)}
.opv-msg-assistant{border-color:#8250df}.opv-msg-tool{border-color:#1a7f37}
.opv-role{font-weight:600;font-size:12px}
.opv-from{font-size:11px;color:var(--accent);cursor:pointer;text-decoration:underline dotted}
.opv-group{margin:4px 0}.opv-chip{display:inline-block;margin:1px 3px;padding:0 5px;
border-radius:8px;background:var(--soft);font-size:12px;cursor:pointer}
.opv-diff{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap;
word-break:break-word}
.opv-diff div{padding:0 6px}.opv-add{background:#dafbe1}.opv-del{background:#ffebe9}
.opv-same{color:var(--mute)}
.opv-more{margin:2px 0 2px 22px}
.opv-ok{color:var(--ok)}.opv-warn{color:var(--run)}.opv-stop{color:var(--stop)}
</style>"""
