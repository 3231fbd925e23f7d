"""A Streamlit app (its own React front end on Base Web, served from the package; the
page is drawn in the browser from what the script sends over a websocket), run as a
child process: a team's expenses with a sidebar of filters, metrics, buttons, tabs, a
table and an expander (/); a new-expense form with a text field, a number, drop-downs,
a date, radios, a check box, a toggle, a text area, a select slider, a file input and
its submit button (/new).

`python -m tests.gui_harness.perception.webapps._streamlit PORT` starts `streamlit run`
on this file, which Streamlit then runs as the app's script."""

from __future__ import annotations

import datetime
import os
import sys

EXPENSES = [
    ("2026-11-03", "Train to Lyon", "Travel", "€ 84.00"),
    ("2026-11-07", "Team lunch", "Meals", "€ 126.50"),
    ("2026-11-12", "Monitor arm", "Equipment", "€ 39.90"),
    ("2026-11-19", "Conference ticket", "Training", "€ 450.00"),
]


def expenses() -> None:
    import streamlit as st

    with st.sidebar:
        st.selectbox("Team", ["Platform", "Design", "Sales"])
        st.multiselect("Categories", ["Travel", "Meals", "Equipment"], default=["Travel"])
        st.date_input("From", datetime.date(2026, 11, 1))
        st.slider("Budget (€)", 0, 5000, 1200)
    st.title("Expenses")
    left, middle, right = st.columns(3)
    left.metric("This month", "€ 700.40", "-12 %")
    middle.metric("Pending", "3")
    right.metric("Approved", "11")
    one, two, _rest = st.columns([1, 1, 4])
    one.button("Refresh")
    two.download_button("Export", "date,item\n", file_name="expenses.csv")
    tab_month, tab_team, tab_notes = st.tabs(["By month", "By team", "Notes"])
    with tab_month:
        st.checkbox("Show approved only")
        st.table(
            {
                name: [row[i] for row in EXPENSES]
                for i, name in enumerate(["Date", "Item", "Category", "Amount"])
            }
        )
    with tab_team:
        st.write("Platform leads this month.")
    with tab_notes:
        st.write("No notes.")
    with st.expander("How approval works"):
        st.write("A manager approves each expense within a week.")
    st.link_button("Expense policy", "http://127.0.0.1/policy")


def new_expense() -> None:
    import streamlit as st

    st.title("New expense")
    with st.form("expense"):
        st.text_input("Description", placeholder="What was it for?")
        st.number_input("Amount (€)", min_value=0.0, value=25.0, step=0.5)
        st.selectbox("Category", ["Travel", "Meals", "Equipment", "Training"])
        st.date_input("Date", datetime.date(2026, 12, 7))
        st.radio("Paid by", ["Company card", "Myself"], horizontal=True)
        st.checkbox("Billable to a client")
        st.toggle("Recurring")
        st.text_area("Notes")
        st.select_slider("Priority", ["Low", "Normal", "High"], value="Normal")
        st.form_submit_button("Submit expense")
    st.button("Cancel")


def _main() -> None:
    import streamlit as st

    st.set_page_config(page_title="Expenses", layout="wide")
    page = st.navigation(
        [
            st.Page(expenses, title="Expenses", url_path="expenses", default=True),
            st.Page(new_expense, title="New expense", url_path="new"),
        ]
    )
    page.run()


if __name__ == "__main__":
    from streamlit import runtime

    if runtime.exists():  # run by `streamlit run` as the app's script
        _main()
    else:
        port = sys.argv[1] if len(sys.argv) > 1 else "8501"
        os.execv(
            sys.executable,
            [
                sys.executable,
                "-m",
                "streamlit",
                "run",
                __file__,
                "--server.port",
                port,
                "--server.address",
                "127.0.0.1",
                "--server.headless",
                "true",
                "--server.fileWatcherType",
                "none",
                "--browser.gatherUsageStats",
                "false",
                "--global.developmentMode",
                "false",
                "--theme.base",
                "light",
            ],
        )
