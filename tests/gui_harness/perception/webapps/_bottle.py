"""A Bottle app with Bottle's own SimpleTemplate templates and a stylesheet of its own
(as a small Bottle app is written: one file, no kit): a recipe box with a sidebar of
categories, a card grid with a sort select and a details disclosure, a recipe form with
a fieldset of radios, a range and a colour input, and a shopping list with steppers."""

from __future__ import annotations

import bottle

_STYLE = """
body { margin: 0; font: 15px/1.45 Georgia, 'DejaVu Serif', serif; color: #3a2e25;
  background: #fbf6ee; }
.top { display: flex; align-items: center; gap: 22px; padding: 12px 28px; background: #7a3e1d; }
.top .logo { font: bold 21px Georgia, serif; color: #fff4e0; text-decoration: none; }
.top nav a { color: #ffd9a8; margin-right: 16px; text-decoration: underline; }
.top .grow { flex: 1; }
.top input { border: 0; border-radius: 14px; padding: 6px 12px; width: 220px; }
.top button, .pill { border: 2px solid #ffd9a8; background: transparent; color: #fff4e0;
  border-radius: 14px; padding: 4px 12px; cursor: pointer; }
.layout { display: flex; gap: 26px; padding: 20px 28px; }
aside { width: 190px; }
aside h3 { font-size: 13px; letter-spacing: .08em; text-transform: uppercase; color: #9a6a45; }
aside ul { list-style: none; margin: 0 0 18px; padding: 0; }
aside li a { display: block; padding: 5px 8px; color: #3a2e25; text-decoration: none;
  border-left: 3px solid transparent; }
aside li a.on { border-left-color: #c8612b; background: #f3e3cf; font-weight: bold; }
main { flex: 1; max-width: 900px; }
.toolbar { display: flex; align-items: center; gap: 12px; margin-bottom: 14px; }
.toolbar select { font: inherit; padding: 4px 6px; border: 1px solid #c9b49c; background: #fffdf9; }
.grid { display: grid; grid-template-columns: repeat(3, 1fr); gap: 16px; }
.recipe { background: #fffdf9; border: 1px solid #e6d6c1; padding: 12px 14px;
  box-shadow: 2px 2px 0 #e6d6c1; }
.recipe h4 { margin: 0 0 4px; font-size: 17px; }
.recipe h4 a { color: #7a3e1d; }
.recipe .meta { color: #8a7764; font-size: 13px; }
.recipe .acts { margin-top: 8px; display: flex; gap: 8px; align-items: center; }
.btn { font: inherit; font-size: 14px; background: #c8612b; color: white; border: 0;
  padding: 5px 12px; border-radius: 3px; cursor: pointer; text-decoration: none; }
.btn.plain { background: #efe2d2; color: #3a2e25; }
.star { background: none; border: 0; font-size: 20px; color: #c8612b; cursor: pointer; }
details { margin-top: 18px; background: #fffdf9; border: 1px dashed #c9b49c; padding: 8px 12px; }
form.recipe-form { background: #fffdf9; border: 1px solid #e6d6c1; padding: 16px 20px; }
form.recipe-form p { margin: 0 0 12px; }
form.recipe-form label.cap { display: block; font-weight: bold; margin-bottom: 3px; }
form.recipe-form input[type=text], form.recipe-form input[type=number],
form.recipe-form textarea { font: inherit; width: 100%; box-sizing: border-box; padding: 5px 7px;
  border: 1px solid #c9b49c; background: #fff; }
fieldset { border: 1px solid #e6d6c1; margin: 0 0 12px; }
.pager { margin-top: 16px; }
.pager a, .pager span { display: inline-block; padding: 3px 9px; margin-right: 4px;
  border: 1px solid #c9b49c; color: #7a3e1d; text-decoration: none; }
.pager span { background: #c8612b; color: white; border-color: #c8612b; }
table.list { border-collapse: collapse; width: 100%; background: #fffdf9; }
table.list td { border-bottom: 1px dotted #c9b49c; padding: 6px 8px; }
.qty button { width: 26px; height: 26px; border: 1px solid #c9b49c; background: #f3e3cf;
  cursor: pointer; }
.qty input { width: 40px; text-align: center; font: inherit; border: 1px solid #c9b49c; }
"""

_BASE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{{title}}</title>
<style>{{!style}}</style></head><body>
<div class="top"><a class="logo" href="/">Recipe Box</a>
<nav><a href="/">Recipes</a><a href="/new">Add a recipe</a><a
href="/shopping">Shopping list</a></nav>
<span class="grow"></span><form action="/" method="get"><input type="search" name="q"
placeholder="Find a recipe" aria-label="Find a recipe"> <button>Go</button></form>
<button class="pill" type="button">Sign in</button></div>
<div class="layout"><aside><h3>Course</h3><ul>
% for name in ('All', 'Breakfast', 'Soups', 'Mains', 'Baking', 'Desserts'):
<li><a href="/?course={{name.lower()}}" class="{{'on' if name == 'All' else ''}}">{{name}}</a></li>
% end
</ul><h3>Diet</h3>
% for name in ('Vegetarian', 'Vegan', 'Gluten free'):
<label><input type="checkbox" name="diet" value="{{name}}"> {{name}}</label><br>
% end
</aside><main>{{!body}}</main></div></body></html>"""

_RECIPES = """<div class="toolbar"><h2 style="margin:0;flex:1">All recipes</h2>
<label for="sort">Sort by</label><select id="sort"><option>Newest</option><option>Quickest</option>
<option>Most loved</option></select><a class="btn" href="/new">+ New recipe</a></div>
<div class="grid">
% for name, minutes, serves in recipes:
<div class="recipe"><h4><a href="/recipe/{{name.lower().replace(' ', '-')}}">{{name}}</a></h4>
<div class="meta">{{minutes}} min · serves {{serves}}</div>
<div class="acts"><a class="btn plain" href="/recipe/{{name.lower().replace(' ', '-')}}">Cook</a>
<button class="star" type="button" aria-label="Save {{name}}">&#9734;</button></div></div>
% end
</div>
<details><summary>How are recipes ranked?</summary><p>By the number of cooks who saved them this
month.</p></details>
<div class="pager"><span>1</span><a href="/?page=2">2</a><a href="/?page=3">3</a>
<a href="/?page=2">Older &raquo;</a></div>"""

_NEW = """<h2>Add a recipe</h2><form class="recipe-form" method="post" action="/new">
<p><label class="cap" for="name">Name</label><input type="text" id="name" name="name"
placeholder="Grandma's apple cake"></p>
<p><label class="cap" for="minutes">Time (minutes)</label><input type="number" id="minutes"
name="minutes" value="45"></p>
<fieldset><legend>Difficulty</legend>
% for level in ('Easy', 'Medium', 'Hard'):
<label><input type="radio" name="difficulty" value="{{level}}"> {{level}}</label>
% end
</fieldset>
<p><label class="cap" for="spice">Spiciness</label><input type="range" id="spice" name="spice"
min="0" max="5" value="1"></p>
<p><label class="cap" for="ingredients">Ingredients, one a line</label><textarea id="ingredients"
name="ingredients" rows="5"></textarea></p>
<p><label class="cap" for="colour">Card colour</label><input type="color" id="colour"
name="colour" value="#c8612b"></p>
<p><label><input type="checkbox" name="public" checked> Share with other cooks</label></p>
<p><button class="btn" type="submit">Save recipe</button> <button class="btn plain"
type="reset">Clear</button> <a href="/">Cancel</a></p></form>"""

_SHOPPING = """<h2>Shopping list</h2><table class="list">
% for item, count in items:
<tr><td><label><input type="checkbox"> {{item}}</label></td>
<td class="qty"><button type="button" aria-label="One less">&minus;</button>
<input type="text" value="{{count}}" aria-label="How many {{item}}">
<button type="button" aria-label="One more">+</button></td>
<td><a href="/shopping?remove={{item}}">Remove</a></td></tr>
% end
</table><p><button class="btn" type="button">Print list</button>
<button class="btn plain" type="button">Clear ticked</button></p>"""

RECIPES = [
    ("Leek and potato soup", 40, 4), ("Shakshuka", 30, 2), ("Banana bread", 70, 8),
    ("Mushroom risotto", 45, 4), ("Lentil dal", 35, 4), ("Apple crumble", 55, 6),
]  # fmt: skip
ITEMS = [("Eggs", 12), ("Leeks", 3), ("Butter", 1), ("Brown lentils", 2), ("Apples", 6)]


def app() -> bottle.Bottle:
    """The WSGI app (its pages: /, /new, /shopping)."""
    web = bottle.Bottle()

    def page(title: str, source: str, **values: object) -> str:
        body = bottle.template(source, **values)
        return str(bottle.template(_BASE, title=title, style=_STYLE, body=body))

    @web.get("/")
    def recipes() -> str:
        return page("Recipes", _RECIPES, recipes=RECIPES)

    @web.get("/new")
    def new() -> str:
        return page("Add a recipe", _NEW)

    @web.get("/shopping")
    def shopping() -> str:
        return page("Shopping list", _SHOPPING, items=ITEMS)

    return web
