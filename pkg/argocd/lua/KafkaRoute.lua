-- KafkaRoute: for each KafkaGateway parent kafkalink reports on, Accepted, ResolvedRefs and
-- (for a Strimzi Kafka backend whose parentRef lists brokers) BrokerIDsMatch.
local parents = {}
if obj.status ~= nil then
  parents = ours(obj.status.parents)
end
if #parents == 0 then
  return { status = "Progressing", message = "Waiting for a KafkaGateway to accept the route" }
end
local names = {}
for _, parent in ipairs(parents) do
  local name = parentName(parent.parentRef)
  table.insert(names, name)
  local accepted = find(parent.conditions, "Accepted")
  if accepted == nil or anyStale(parent.conditions) then
    worse("Progressing", name .. ": " .. waitingFor("the gateway"))
  else
    judge(name .. ": ", accepted, "True")
    for _, conditionType in ipairs({ "ResolvedRefs", "BrokerIDsMatch" }) do
      local c = find(parent.conditions, conditionType)
      if c ~= nil then
        judge(name .. ": ", c, "True")
      end
    end
  end
end
if hs.status == "Healthy" then
  hs.message = "Accepted by " .. table.concat(names, ", ")
end
return hs
