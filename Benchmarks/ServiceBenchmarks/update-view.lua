-- wrk script: single-op PATCH updateItem of a random item of a views.sh list,
-- keeping its owner (so its owner's view sees the change) with a new rank and score.
-- IDS (optional): space-separated "id:score" pairs to draw from instead (views.sh's
-- depth rounds); the score moves by at most 2, so the item stays about as deep.
-- LIST_PATH=/lists/<id> ITEMS=<count> [IDS=...] wrk -t1 -c64 -d10s -s update-view.lua http://127.0.0.1:8080
local path = os.getenv("LIST_PATH")
local items = tonumber(os.getenv("ITEMS"))
local pool = {}
for id, score in string.gmatch(os.getenv("IDS") or "", "i(%d+):(%d+)") do
    pool[#pool + 1] = {tonumber(id), tonumber(score)}
end
math.randomseed(os.time())
request = function()
    local id, score
    if #pool > 0 then
        local pick = pool[math.random(1, #pool)]
        id, score = pick[1], pick[2] + math.random(-2, 2)
    else
        id, score = math.random(0, items - 1), math.random(0, 999999)
    end
    local body = string.format(
        '{"ops":[{"op":"updateItem","id":"i%d","model":{"owner":"u%d","rank":%d,"score":%d}}]}',
        id, id % 1000, math.random(0, 999999), score)
    return wrk.format("PATCH", path, {["Content-Type"] = "application/json"}, body)
end
response = function(status, headers, body)
    if status ~= 200 then
        io.stderr:write("status " .. status .. ": " .. body .. "\n")
    end
end
