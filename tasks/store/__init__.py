"""What runs keep on disk: the result cache, files written atomically, provider batches. No Prefect."""
