-- The archive is written on every push: ZSTD(1) compresses several times faster than ZSTD(3),
-- for a few percent more bytes on disk. Parts already written keep their codec until merged.
ALTER TABLE raw_chunks MODIFY COLUMN data String CODEC(ZSTD(1));
