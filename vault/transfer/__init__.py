"""Moving memory in and out: the layouts of other memory tools read into the vault, the vault written out as readable markdown."""
