"""Showing models and verdicts to people: the graph layout, the HTML report (Jinja2
templates in ``templates/``), the PNG picture and the forms CI systems read."""
