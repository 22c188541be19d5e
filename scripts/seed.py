"""`scripts/seed`: put Mastra snapshot documents into a database, for a demo."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta

from pymongo import MongoClient

from scripts.copies import copies, fixture_documents, insert_runs
from suspended_runs.server import EmbeddedMongoDB, Settings
from suspended_runs.storage import SNAPSHOTS_COLLECTION, Document


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/seed",
        description="Load the Mastra fixture snapshots (and COPIES more runs) into the database "
        "of MONGODB_URI, or of the embedded MongoDB that scripts/serve runs under DATA_DIR.",
    )
    parser.add_argument("--copies", type=int, default=0, help="extra runs (default 0)")
    parser.add_argument("--agents", type=int, default=20, help="agents the copies spread over")
    args = parser.parse_args()
    settings = Settings()
    uri = settings.mongodb_uri or EmbeddedMongoDB.running_in(settings.data_dir)
    if uri is None:
        print(
            f"no database: set MONGODB_URI, or start scripts/serve (DATA_DIR={settings.data_dir})",
            file=sys.stderr,
        )
        return 1
    with MongoClient[Document](uri) as client:
        collection = client[settings.mongodb_db][SNAPSHOTS_COLLECTION]
        # Seeding twice adds no second copy: a snapshot is unique by (workflow_name, run_id).
        fixtures = [
            d
            for d in fixture_documents()
            if not collection.find_one({"workflow_name": d["workflow_name"], "run_id": d["run_id"]})
        ]
        if fixtures:
            collection.insert_many(fixtures)
        start = datetime.now(UTC) - timedelta(seconds=args.copies)
        insert_runs(collection, copies(args.copies, args.agents, start))
    runs = len({d["run_id"] for d in fixtures})  # Mastra writes two documents a run
    print(
        f"seeded {runs} suspended runs of the fixtures ({len(fixtures)} snapshot documents) "
        f"and {args.copies} copied runs"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
