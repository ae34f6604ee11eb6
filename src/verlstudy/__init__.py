"""verlstudy: runnable lessons from merged verl pull requests, with the helpers they import."""

__version__ = "0.1.0"
