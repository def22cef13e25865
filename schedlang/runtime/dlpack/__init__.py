"""DLPack both ways, so arrays cross between libraries without copies: the C ABI, export, import."""
