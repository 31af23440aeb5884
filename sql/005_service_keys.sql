-- Secrets shared by every instance of the service that uses this database, generated once when
-- the migration is applied. The list_sessions cursor is signed with `cursor`, so a cursor minted
-- by one instance verifies on another and survives restarts.

CREATE TABLE IF NOT EXISTS service_keys
(
    name        String,
    key         String,
    created_at  DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(created_at)
ORDER BY name;

INSERT INTO service_keys SELECT 'cursor', hex(randomString(32)), now64(3) WHERE (SELECT count() FROM service_keys WHERE name = 'cursor') = 0;
