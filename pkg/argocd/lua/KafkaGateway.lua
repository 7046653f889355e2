-- KafkaGateway: Accepted, ResolvedRefs and Programmed, then each listener's Accepted,
-- ResolvedRefs and Programmed, then the proxies in member clusters. A listener's Conflicted
-- condition is left out: it says a later route was refused, which that KafkaRoute's health
-- reports; the gateway serves its other routes.
local status = obj.status
local accepted = nil
local programmed = nil
if status ~= nil then
  accepted = find(status.conditions, "Accepted")
  programmed = find(status.conditions, "Programmed")
end
if accepted == nil or programmed == nil or anyStale(status.conditions) then
  return { status = "Progressing", message = waitingFor("kafkalink") }
end
hs.message = named(programmed.message or programmed.reason)
judge("", accepted, "True")
local resolved = find(status.conditions, "ResolvedRefs")
if resolved ~= nil then
  judge("", resolved, "True")
end
judge("", programmed, "True")
if status.listeners ~= nil then
  for _, listener in ipairs(status.listeners) do
    for _, conditionType in ipairs({ "Accepted", "ResolvedRefs", "Programmed" }) do
      local c = find(listener.conditions, conditionType)
      if c ~= nil then
        judge("listener " .. named(listener.name) .. ": ", c, "True")
      end
    end
  end
end
if status.members ~= nil then
  for _, member in ipairs(status.members) do
    judgeCopy("member " .. named(member.name) .. ": ", member, member.programmed)
  end
end
return hs
