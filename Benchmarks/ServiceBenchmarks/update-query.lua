-- wrk script: single-op PATCH updateItem of a random item, with the query
-- benchmark's model shape ({"k": 0-99, "name": "Item …"}), so every write
-- changes both indexed values of a list that declares indexes on k and name.
-- LIST_PATH=/lists/<id> ITEMS=<count> wrk -t1 -c64 -d10s -s update-query.lua http://127.0.0.1:8080
local path = os.getenv("LIST_PATH")
local items = tonumber(os.getenv("ITEMS"))
local counter = 0
math.randomseed(os.time())
-- KEEP_INDEXED=1: each write keeps the item's k and name (as ServiceBenchmarks make wrote
-- them: k = n % 100, name = "Item n") and changes only an unindexed number.
local keep = os.getenv("KEEP_INDEXED") == "1"
request = function()
    counter = counter + 1
    local n = math.random(0, items - 1)
    local body
    if keep then
        body = string.format('{"ops":[{"op":"updateItem","id":"i%d","model":{"k":%d,"name":"Item %d","n":%d}}]}',
            n, n % 100, n, counter)
    else
        body = string.format('{"ops":[{"op":"updateItem","id":"i%d","model":{"k":%d,"name":"Item %d"}}]}',
            n, counter % 100, counter)
    end
    return wrk.format("PATCH", path, {["Content-Type"] = "application/json"}, body)
end
response = function(status, headers, body)
    if status ~= 200 then
        io.stderr:write("status " .. status .. ": " .. body .. "\n")
    end
end
