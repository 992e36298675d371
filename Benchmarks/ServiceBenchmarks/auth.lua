-- wrk script: GET of one list's snapshot with a bearer token (static or signed).
-- LIST_PATH=/lists/<id> TOKEN=<token> wrk -t2 -c64 -d10s -s auth.lua http://127.0.0.1:8080
local path = os.getenv("LIST_PATH")
local token = os.getenv("TOKEN")
request = function()
    return wrk.format("GET", path, {["Authorization"] = "Bearer " .. token})
end
response = function(status, headers, body)
    if status ~= 200 then
        io.stderr:write("status " .. status .. ": " .. body .. "\n")
    end
end
