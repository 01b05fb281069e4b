// Package migrate moves the stored parents of a set's CRD to its storage
// version, so that an old version can be retired (loom run
// --install-crds).
//
// When loom.yaml's storageVersion changes, the API server stores new
// writes in the new version but leaves every parent already stored as it
// was, and keeps the old version in the CRD's status.storedVersions. The
// Migrator, fed the CRD's name after each install, closes that gap:
//
//	Enqueue(crd) ─► worker ─► read the CRD ─► Plan: storedVersions beyond
//	    the storage version? ─► owned by Loom? ─► wait until discovery's
//	    storageVersionHash names the storage version ─► either
//	      a StorageVersionMigration (storagemigration.k8s.io, when served),
//	      waited for; or Rewrite: every parent listed in pages and updated
//	      as read (a no-op write the API server encodes in the storage
//	      version; a conflict reads it again, a parent deleted is fine)
//	    ─► patch the CRD's status.storedVersions to [storage]
//
// storedVersions shrinks only after every parent was rewritten, so a Loom
// that stops halfway starts again from the beginning on its next start:
// every rewrite is a no-op for a parent already moved. The writes go
// through Loom's client, and so its QPS and burst bound their rate. Only
// one replica runs it: the leader (the Manager runs only while leading),
// or, sharded, the replica that holds bucket 0 (Options.Single).
package migrate
