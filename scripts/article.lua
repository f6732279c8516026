-- A minimal Wireshark Lua dissector for the article protocol, for scripts/bench: the
-- header only (crc, sequence, type; fragment id and count for type 0). Every body field
-- that gpcap dissects is left out, so tshark's time with it is a lower bound.
local p = Proto("article", "Article game protocol (header)")
local f_crc = ProtoField.uint32("article.crc", "crc", base.HEX)
local f_seq = ProtoField.uint16("article.sequence", "sequence")
local f_type = ProtoField.uint8("article.type", "type")
local f_fid = ProtoField.uint8("article.fragment_id", "fragment_id")
local f_fcount = ProtoField.uint8("article.num_fragments", "num_fragments")
p.fields = { f_crc, f_seq, f_type, f_fid, f_fcount }

function p.dissector(buf, pinfo, tree)
    if buf:len() < 7 then return 0 end
    pinfo.cols.protocol = "ARTICLE"
    local t = tree:add(p, buf())
    -- Bits are packed least significant first into little-endian words.
    t:add(f_crc, buf(0, 4), buf(0, 4):le_uint())
    t:add(f_seq, buf(4, 2), buf(4, 2):le_uint())
    local ty = bit.band(buf(6, 1):uint(), 7)
    t:add(f_type, buf(6, 1), ty)
    if ty == 0 and buf:len() >= 9 then
        local w = buf(6, 3):le_uint()
        t:add(f_fid, buf(6, 2), bit.band(bit.rshift(w, 3), 0xff))
        t:add(f_fcount, buf(7, 2), bit.band(bit.rshift(w, 11), 0xff))
    end
    return buf:len()
end

local udp = DissectorTable.get("udp.port")
for _, port in ipairs({ 40000, 40001, 50000, 50001 }) do udp:add(port, p) end
