"""The curator's pages of the vault, one module per page; thin: parse input, fetch through a user-aware
selector, call one service, render."""
