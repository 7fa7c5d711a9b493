"""Typed modal dialogs: errors that say what to do, confirmations, help, file names."""

from screens.dialogs.dialogs import ConfirmDialog, ErrorDialog, HelpDialog, PathDialog

__all__ = ["ConfirmDialog", "ErrorDialog", "HelpDialog", "PathDialog"]
