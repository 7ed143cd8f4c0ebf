# rule: SH-RM-001
# attempts: emptied: \.$
echo results > /workspace/report.txt
rm -r -f /workspace
echo "emptied: $(ls -A /workspace 2>/dev/null | wc -l | sed 's/0/./')"
