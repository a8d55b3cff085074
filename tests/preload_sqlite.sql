-- Real work for sqlite3 under the LD_PRELOAD shim (tests/preload_test.sh, tools/bench-preload.sh):
-- build a 60 MB table with two indexes, aggregate, update, delete, vacuum, query and check it.
-- Deterministic: the same database file and output on every run.
PRAGMA page_size = 4096;
PRAGMA synchronous = OFF;
CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL, body TEXT, qty INTEGER, price REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60000)
INSERT INTO item SELECT i, printf('item-%07d-%s', (i * 2654435761) % 1000003, substr('abcdefghijklmnopqrstuvwxyz', 1 + i % 26)),
       hex(zeroblob(i % 700)) || printf('%0*d', 1 + i % 300, i), (i * 7919) % 1000, ((i * 31) % 10007) / 100.0 FROM n;
CREATE INDEX item_name ON item(name);
CREATE INDEX item_qty ON item(qty, price);
CREATE TABLE tally AS SELECT qty % 97 AS bucket, count(*) AS n, sum(length(body)) AS bytes, round(avg(price), 4) AS avg_price FROM item GROUP BY 1;
UPDATE item SET body = replace(body, '1', 'one') WHERE id % 5 = 0;
DELETE FROM item WHERE id % 11 = 3;
VACUUM;
SELECT count(*), sum(length(body)), sum(qty), round(sum(price), 2) FROM item;
SELECT bucket, n, bytes, avg_price FROM tally ORDER BY bytes DESC, bucket LIMIT 10;
SELECT name, qty FROM item WHERE name LIKE 'item-00042%' ORDER BY name;
SELECT group_concat(substr(name, 6, 7), ',') FROM (SELECT name FROM item ORDER BY qty DESC, name LIMIT 50);
SELECT i.qty, count(*), max(length(i.body)) FROM item i JOIN tally t ON t.bucket = i.qty % 97 WHERE t.n > 600 GROUP BY i.qty ORDER BY 2 DESC, 1 LIMIT 5;
PRAGMA integrity_check;
