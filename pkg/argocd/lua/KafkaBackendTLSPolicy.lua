-- KafkaBackendTLSPolicy: for each KafkaGateway whose routes have a backend the policy targets,
-- Accepted and ResolvedRefs. A policy no gateway uses has no ancestors, and stays so until a
-- route uses it: that is Healthy, or an application applying the policy before its routes
-- would wait for ever.
local ancestors = {}
if obj.status ~= nil then
  ancestors = ours(obj.status.ancestors)
end
if #ancestors == 0 then
  return { status = "Healthy", message = unusedMessage }
end
local names = {}
for _, ancestor in ipairs(ancestors) do
  local name = parentName(ancestor.ancestorRef)
  table.insert(names, name)
  local accepted = find(ancestor.conditions, "Accepted")
  if accepted == nil or anyStale(ancestor.conditions) then
    worse("Progressing", name .. ": " .. waitingFor("the gateway"))
  else
    judge(name .. ": ", accepted, "True")
    local resolved = find(ancestor.conditions, "ResolvedRefs")
    if resolved ~= nil then
      judge(name .. ": ", resolved, "True")
    end
  end
end
if hs.status == "Healthy" then
  hs.message = "Applies to the backends of " .. table.concat(names, ", ")
end
return hs
