"""The hostile-input catalogue: the case type (``case``), one ``cases_<area>`` module per area, the runner."""
