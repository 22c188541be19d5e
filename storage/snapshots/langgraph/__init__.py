"""LangGraph's checkpoints, as `MongoDBSaver` writes them: decoding their values without
importing what they name, the interrupt shapes, and a thread's runs."""
