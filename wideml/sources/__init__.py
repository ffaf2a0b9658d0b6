"""Sources turned into feature stores (``wideml ingest``): one reader per format, one copy loop."""
