"""A Flask-Admin app (its Bootstrap 4 theme and widgets, served from the package) over
SQLAlchemy models in an in-memory SQLite database: a products list with search,
filters, row actions and pagination; a new product form; a supplier's edit form."""

from __future__ import annotations

import enum

from flask import Flask
from flask_admin import Admin
from flask_admin.contrib.sqla import ModelView
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy.pool import StaticPool


class Category(enum.Enum):
    tools = "Tools"
    parts = "Parts"
    paint = "Paint"


def app() -> Flask:
    """The WSGI app (pages /admin/product/, /admin/product/new/, /admin/supplier/edit/?id=1)."""
    flask = Flask(__name__)
    flask.config.update(
        SECRET_KEY="bench-only",
        SQLALCHEMY_DATABASE_URI="sqlite://",
        SQLALCHEMY_ENGINE_OPTIONS={
            "connect_args": {"check_same_thread": False},
            "poolclass": StaticPool,
        },
    )
    db = SQLAlchemy(flask)

    class Supplier(db.Model):  # type: ignore[name-defined,misc]
        id = db.Column(db.Integer, primary_key=True)
        name = db.Column(db.String(80), nullable=False)
        email = db.Column(db.String(120))
        phone = db.Column(db.String(40))
        city = db.Column(db.String(60))
        preferred = db.Column(db.Boolean, default=False)
        terms = db.Column(db.Text)

        def __str__(self) -> str:
            return str(self.name)

    class Product(db.Model):  # type: ignore[name-defined,misc]
        id = db.Column(db.Integer, primary_key=True)
        name = db.Column(db.String(80), nullable=False)
        sku = db.Column(db.String(20))
        price = db.Column(db.Numeric(8, 2))
        stock = db.Column(db.Integer)
        category = db.Column(db.Enum(Category))
        active = db.Column(db.Boolean, default=True)
        supplier_id = db.Column(db.Integer, db.ForeignKey("supplier.id"))
        supplier = db.relationship(Supplier)

    class Products(ModelView):
        column_searchable_list = ("name", "sku")
        column_filters = ("category", "active", "price")
        column_editable_list = ("stock",)
        can_view_details = True
        page_size = 8

    class Suppliers(ModelView):
        form_columns = ("name", "email", "phone", "city", "preferred", "terms")

    admin = Admin(flask, name="Hardware store")
    admin.add_view(Products(Product, db.session, name="Products"))
    admin.add_view(Suppliers(Supplier, db.session, name="Suppliers"))
    with flask.app_context():
        db.create_all()
        acme = Supplier(name="Acme Tools", email="sales@acme.test", phone="555-0100", city="Leeds")
        bolt = Supplier(name="Bolt & Co", email="hi@bolt.test", phone="555-0199", city="York")
        db.session.add_all([acme, bolt])
        items = [
            ("Claw hammer", "HM-01", 12.5, 40, Category.tools, acme),
            ("Wood screws 4x40", "SC-44", 4.2, 500, Category.parts, bolt),
            ("Cordless drill", "DR-18", 89.0, 12, Category.tools, acme),
            ("Primer white 1 l", "PR-10", 9.9, 65, Category.paint, bolt),
            ("Hex bolts M8", "HB-08", 6.1, 320, Category.parts, bolt),
            ("Spirit level", "SL-60", 18.0, 22, Category.tools, acme),
            ("Gloss black 750 ml", "GB-75", 11.4, 30, Category.paint, bolt),
            ("Wall plugs", "WP-06", 2.8, 900, Category.parts, acme),
            ("Tape measure 5 m", "TM-05", 7.5, 55, Category.tools, acme),
            ("Masking tape", "MT-25", 3.3, 150, Category.paint, bolt),
        ]
        for name, sku, price, stock, category, supplier in items:
            db.session.add(
                Product(
                    name=name,
                    sku=sku,
                    price=price,
                    stock=stock,
                    category=category,
                    supplier=supplier,
                )
            )
        db.session.commit()
    return flask
